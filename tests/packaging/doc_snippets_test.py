#!/usr/bin/env python3
"""The code in README.md and docs/*.md compiles: every ```c++ block that
begins with an #include of <roundtable/...> is a translation unit compiled
(syntax and types) against the public headers alone, every such ```c block
likewise as C, and every ```python block must parse. Prints each block
that fails, with the compiler's words.

  doc_snippets_test.py SOURCE_DIR GENERATED_INCLUDE_DIR
"""
import glob
import os
import re
import subprocess
import sys
import tempfile

BLOCK = re.compile(r"^```([a-z+]*)\n(.*?)^```", re.M | re.S)


def main():
    top, generated = sys.argv[1], sys.argv[2]
    includes = ["-I", os.path.join(top, "engine", "include"), "-I", generated]
    files = [os.path.join(top, "README.md")] + sorted(
        glob.glob(os.path.join(top, "docs", "*.md")))
    checked = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in files:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for m in BLOCK.finditer(text):
                lang, code = m.group(1), m.group(2)
                line = text.count("\n", 0, m.start()) + 1
                where = f"{os.path.relpath(path, top)}:{line}"
                if lang == "python":
                    try:
                        compile(code, where, "exec")
                    except SyntaxError as e:
                        print(f"{where}: {e}")
                        failed += 1
                    checked += 1
                    continue
                if lang not in ("c++", "cpp", "c"):
                    continue
                if not code.lstrip().startswith("#include <roundtable/"):
                    continue  # a fragment, not a translation unit
                is_c = lang == "c"
                src = os.path.join(tmp, "snippet." + ("c" if is_c else "cc"))
                with open(src, "w") as f:
                    f.write(code)
                cmd = (["cc", "-std=c11"] if is_c else
                       ["c++", "-std=c++20"]) + [
                           "-fsyntax-only", "-Wall", "-Werror",
                           "-Wno-unused-variable"] + includes + [src]
                run = subprocess.run(cmd, capture_output=True, text=True)
                if run.returncode != 0:
                    print(f"{where}: does not compile:\n{run.stderr}")
                    failed += 1
                checked += 1
    if checked == 0:
        print("no snippets found")
        return 1
    print(f"doc_snippets_test: {checked} snippets, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
