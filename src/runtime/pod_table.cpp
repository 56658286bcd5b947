#include "runtime/pod_table.hpp"

#include <openssl/evp.h>

#include <string>

namespace sluice::runtime {

row_identity identity_of(std::string_view text) {
  row_identity out{};
  unsigned int len = 0;
  // EVP_Digest fails only when it cannot allocate; the all-zero identity then names one row for all.
  if (EVP_Digest(text.data(), text.size(), out.data(), &len, EVP_sha256(), nullptr) != 1) out.fill(0);
  return out;
}

error pod_rows_error(std::size_t w, std::size_t rows, std::string_view what, std::string_view advice) {
  if (!is_pod_worker_row(w))  // never folded onto another worker's row
    return error::make(errc::bad_request, "worker row " + std::to_string(w) + " is not one of the pod's " +
                                              std::to_string(pod_worker_rows));
  std::string m = "more " + std::string(what) + " than a pod of --processes holds (" + std::to_string(rows) +
                  " across the generations alive";
  if (!advice.empty()) m += "; " + std::string(advice);
  return error::make(errc::bad_request, m + ")");
}

}  // namespace sluice::runtime
