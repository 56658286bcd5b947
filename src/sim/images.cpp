#include "sim/images.hpp"

#include <algorithm>
#include <charconv>

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include "sim/bytes.hpp"

namespace sluice::sim {
namespace {

namespace json = boost::json;

// Output tokens an image costs (what gpt-image-1 reports for a low-quality square image).
constexpr std::uint64_t tokens_per_image = 272;

error image_refusal(std::string message, std::string param) {
  return error::make(errc::bad_request, std::move(message), std::move(param));
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((v >> shift) & 0xff);
}

std::uint32_t png_crc(std::string_view bytes) noexcept {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return c ^ 0xffffffffu;
}

// A PNG chunk: length, type, data, CRC of type and data.
void put_chunk(std::string& out, std::string_view type, std::string_view data) {
  put_u32(out, static_cast<std::uint32_t>(data.size()));
  const std::string body = std::string(type) + std::string(data);
  out += body;
  put_u32(out, png_crc(body));
}

result<std::uint32_t> image_count(const form_collector& form) {
  const std::string* n = form.field("n");
  if (!n || n->empty()) return 1u;
  std::uint32_t v = 0;
  const auto [p, ec] = std::from_chars(n->data(), n->data() + n->size(), v);
  if (ec != std::errc{} || p != n->data() + n->size() || v < 1 || v > max_images_per_request)
    return image_refusal("n: an integer from 1 to 10", "n");
  return v;
}

}  // namespace

result<image_request> image_request_of(const form_collector& form, bool edit) {
  if (form.problem()) return *form.problem();
  image_request req;
  req.edit = edit;
  bool any = false;
  req.digest = fnv1a_hasher::offset_basis;
  for (const auto& f : form.files()) {
    if (f.field != "image" && f.field != "image[]") continue;
    any = true;
    req.image_bytes += f.digest.size;
    req.digest = mix64(req.digest ^ f.digest.value);
  }
  if (!any) return image_refusal("Missing required parameter: 'image'.", "image");
  const std::string* prompt = form.field("prompt");
  if (edit && (!prompt || prompt->empty())) return image_refusal("Missing required parameter: 'prompt'.", "prompt");
  req.prompt_bytes = prompt ? prompt->size() : 0;
  auto n = image_count(form);
  if (!n) return std::move(n).err();
  req.n = *n;
  if (const std::string* f = form.field("response_format"); f && !f->empty()) {
    if (*f != "url" && *f != "b64_json") return image_refusal("response_format: url or b64_json", "response_format");
    req.url = *f == "url";
  }
  return req;
}

std::string tiny_png(std::uint32_t rgb) {
  std::string out("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_u32(ihdr, 1);  // width
  put_u32(ihdr, 1);  // height
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bits, RGB, deflate, no filter set, no interlace
  put_chunk(out, "IHDR", ihdr);
  // One scanline (filter byte 0, then R G B) in a zlib stream of one stored deflate block.
  const std::string line{'\0', static_cast<char>(rgb >> 16), static_cast<char>(rgb >> 8), static_cast<char>(rgb)};
  std::uint32_t a = 1, b = 0;
  for (unsigned char ch : line) {
    a = (a + ch) % 65521;
    b = (b + a) % 65521;
  }
  std::string idat("\x78\x01\x01\x04\x00\xfb\xff", 7);
  idat += line;
  put_u32(idat, (b << 16) | a);
  put_chunk(out, "IDAT", idat);
  put_chunk(out, "IEND", {});
  return out;
}

std::string images_body(const image_request& req, std::int64_t created) {
  json::array data;
  for (std::uint32_t i = 0; i < req.n; ++i) {
    const std::string b64 = base64_encode(tiny_png(static_cast<std::uint32_t>(mix64(req.digest + i) & 0xffffff)));
    if (req.url) data.push_back(json::object{{"url", "data:image/png;base64," + b64}});
    else data.push_back(json::object{{"b64_json", b64}});
  }
  const std::uint64_t text_tokens = req.prompt_bytes == 0 ? 0 : std::max<std::uint64_t>(1, (req.prompt_bytes + 3) / 4);
  const std::uint64_t image_tokens = std::max<std::uint64_t>(1, req.image_bytes / 1024);
  const std::uint64_t output_tokens = tokens_per_image * req.n;
  json::object usage{{"total_tokens", text_tokens + image_tokens + output_tokens},
                     {"input_tokens", text_tokens + image_tokens},
                     {"output_tokens", output_tokens},
                     {"input_tokens_details", json::object{{"text_tokens", text_tokens}, {"image_tokens", image_tokens}}}};
  return json::serialize(json::object{{"created", created}, {"data", std::move(data)}, {"usage", std::move(usage)}});
}

}  // namespace sluice::sim
