#!/usr/bin/env python3
"""The code's shape, checked on every CI run (issue 29, docs/architecture.md "Habits"):

- no function in src/ is longer than HARD lines, and at most SOFT_COUNT are longer than SOFT
  (lengths from Universal Ctags: a definition's first line to its last, both counted);
- no two .cpp files include each other's headers (a cycle between two files);
- proxy/'s folders include one another only downward (FOLDER_RULES; docs/architecture.md): the
  relay and structured outputs never reach the responses, the adapters, the pipeline or the
  request's story (services, request_context, request_validation: they take a small context);
  the responses module reaches the pipeline only through job_runner; only the gateway includes
  the dispatcher, and nothing includes the health checks;
- no lambda that captures is a coroutine: its frame outlives the full expression that made it, so
  the captures dangle once the first co_await suspends (pass what it needs as parameters).

Prints every finding as `file:line: what` and exits 1 if there is any.
"""
import pathlib
import re
import subprocess
import sys

HARD = 80
SOFT = 60
SOFT_COUNT = 5

root = pathlib.Path(__file__).resolve().parents[2]
src = root / "src"


def functions():
    """(length, file, line, name) of every function definition in src/."""
    files = sorted(str(p) for p in src.rglob("*.[ch]pp"))
    out = subprocess.run(
        ["ctags", "--languages=C++", "--kinds-C++=f", "--fields=+ne", "-x",
         "--_xformat=%{line}\t%{end}\t%{input}\t%{name}", *files],
        check=True, capture_output=True, text=True).stdout
    for row in out.splitlines():
        first, last, path, name = row.split("\t")
        if first and last:
            yield int(last) - int(first) + 1, pathlib.Path(path).relative_to(root), int(first), name


def function_findings():
    lengths = sorted(functions(), reverse=True)
    found = [f"{p}:{l}: {n} is {n_} lines (more than {HARD})" for n_, p, l, n in lengths if n_ > HARD]
    over = [(n_, p, l, n) for n_, p, l, n in lengths if SOFT < n_ <= HARD]
    if len(over) > SOFT_COUNT:
        found += [f"{p}:{l}: {n} is {n_} lines: {len(over)} functions are over {SOFT}, at most {SOFT_COUNT} may be"
                  for n_, p, l, n in over]
    return found


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def include_findings():
    own = {}  # "dir/stem" -> the project headers its .cpp includes
    for cpp in src.rglob("*.cpp"):
        key = str(cpp.relative_to(src).with_suffix(""))
        own[key] = {str(pathlib.Path(h).with_suffix("")) for h in INCLUDE.findall(cpp.read_text())}
    found = []
    for a, inc in sorted(own.items()):
        for b in sorted(inc):
            if a < b and b in own and a in own[b] and (src / (a + ".hpp")).exists():
                found.append(f"src/{a}.cpp and src/{b}.cpp include each other's headers")
    return found


# (folder of the including file, what it must not include): a path prefix under src/.
# The top of the request's path: the dispatcher, then the pipeline under it.
TOP = ("proxy/dispatcher.", "proxy/pipeline.")
# What a request's story holds (the pipeline's whole world): the relay and structured outputs take
# what they use as parameters or a small context (relay_context.hpp) instead.
STORY = ("proxy/services.hpp", "proxy/shared_config.hpp", "proxy/request_context.hpp",
         "proxy/request_trace.hpp", "proxy/request_validation.hpp", "proxy/options.hpp")

FOLDER_RULES = [
    ("proxy/relay/", ("proxy/responses/", "proxy/adapters/", "proxy/health/") + TOP + STORY),
    ("proxy/structured/", ("proxy/relay/", "proxy/responses/", "proxy/adapters/", "proxy/health/") + TOP + STORY),
    ("proxy/responses/", ("proxy/adapters/", "proxy/health/") + TOP),
    ("proxy/adapters/", ("proxy/responses/", "proxy/health/") + TOP),
    ("proxy/health/", ("proxy/relay/", "proxy/structured/", "proxy/responses/") + TOP),
    ("proxy/", ("proxy/health/", "proxy/dispatcher.")),
]


def folder_findings():
    found = []
    for path in sorted(src.rglob("*.[ch]pp")):
        here = str(path.relative_to(src))
        for folder, banned in FOLDER_RULES:
            if not here.startswith(folder):
                continue
            for inc in INCLUDE.findall(path.read_text()):
                if any(inc.startswith(b) and not here.startswith(b) for b in banned):
                    found.append(f"src/{here}: includes {inc}, against the direction of proxy/'s folders")
            break  # the first (most specific) rule that names the file's folder
    return found


def strip(text):
    """The text with comments, string and character literals blanked (lines kept)."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|R"([^(]*)\(.*?\)\1"|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


LAMBDA = re.compile(r"\[([^\[\]]*)\]\s*(\([^()]*(?:\([^()]*\)[^()]*)*\))?\s*(?:mutable\s*)?(?:noexcept\s*)?->[^{;]*\{")
COROUTINE = re.compile(r"\bco_(await|return|yield)\b")


def body_end(text, open_brace):
    depth = 0
    for i in range(open_brace, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def lambda_findings():
    found = []
    for path in sorted(src.rglob("*.[ch]pp")):
        text = strip(path.read_text())
        for m in LAMBDA.finditer(text):
            if not m.group(1).strip():
                continue
            body = text[m.end() - 1:body_end(text, m.end() - 1) + 1]
            if COROUTINE.search(body):
                line = text.count("\n", 0, m.start()) + 1
                found.append(f"{path.relative_to(root)}:{line}: a capturing lambda is a coroutine")
    return found


def main():
    findings = function_findings() + include_findings() + folder_findings() + lambda_findings()
    for f in findings:
        print(f)
    if findings:
        return 1
    print(f"code shape: no function over {HARD} lines, at most {SOFT_COUNT} over {SOFT}; "
          "no include cycle between two files; proxy/'s folders include downward only; "
          "no capturing lambda coroutine")
    return 0


if __name__ == "__main__":
    sys.exit(main())
