#!/usr/bin/env python3
"""Doxygen's input filter for include/: reads the headers' plain C comments as documentation.

The public headers are commented in plain `/* ... */` prose (STYLE.md), not in Doxygen's
markup. This filter, run by Doxygen on each header (docs/Doxyfile.in, INPUT_FILTER), turns
  - the file's first comment into its @file page,
  - a comment that starts a line into a documentation block for what follows (`/**`),
  - a comment after code on the same line into a member's documentation (`/**<`),
  - `/* ---- Section ---- */` rules into nothing,
and escapes what Doxygen would read as markup inside comments (`@axis`, `<name>`, `\\`, `#`,
`%`, `$`). The output has the same lines as the input, so Doxygen's line numbers stay right.

usage: doxygen_filter.py FILE
"""
import re
import sys

text = open(sys.argv[1], encoding="utf-8").read()


def escape(body):
    body = body.replace("\\", "\\\\")
    body = re.sub(r"([@<>#%$&])", r"\\\1", body)
    return body


out = []
i = 0
first = True
n = len(text)
while i < n:
    j = text.find("/*", i)
    if j < 0:
        out.append(text[i:])
        break
    # Skip string literals and // comments before j (headers have few; be careful anyway).
    seg = text[i:j]
    if seg.count('"') % 2 == 1 or "//" in seg.split("\n")[-1]:
        out.append(text[i:j + 2])
        i = j + 2
        continue
    out.append(seg)
    k = text.find("*/", j + 2)
    if k < 0:
        out.append(text[j:])
        break
    body = text[j + 2:k]
    line_start = text.rfind("\n", 0, j) + 1
    before = text[line_start:j]
    if re.fullmatch(r"\s*-{3,}.*-{3,}\s*|\s*-+\s*", body.replace("\n", " ")) or \
       re.fullmatch(r"[\s*-]*", body):
        # a rule, or a section title between rules: keep the lines, drop the comment
        out.append("/*" + body + "*/")
    elif before.lstrip().startswith("#") or before.strip() == "}":
        out.append("/*" + body + "*/")  # after a directive or a closing brace: a plain note
    elif body.startswith("*") or body.startswith("!"):
        out.append("/*" + body + "*/")  # already documentation
    elif first and before.strip() == "":
        out.append("/** @file\n" + escape(body).lstrip("\n") + "*/")
        # keep line numbers: @file adds one line, so drop one newline if the body starts with one
        if body.startswith("\n"):
            pass
        else:
            out[-1] = "/** @file " + escape(body) + "*/"
    elif before.strip() == "":
        out.append("/**" + escape(body) + "*/")
    else:
        out.append("/**<" + escape(body) + "*/")
    first = False
    i = k + 2


def declarations(lines):
    """Declarations (and declarators) in lines, counted at parenthesis depth 0."""
    count, depth = 0, 0
    for line in lines:
        code = re.sub(r"/\*.*?\*/", "", line)
        for c in code:
            if c in "([":
                depth += 1
            elif c in ")]":
                depth -= 1
            elif c in ";," and depth == 0:
                count += 1
    return count


# One comment over several declarations (tirx_exp and tirx_log; `int block_m, block_n;`):
# a member group, so that DISTRIBUTE_GROUP_DOC gives each of them the comment.
lines = "".join(out).split("\n")
i = 0
while i < len(lines):
    if re.match(r"\s*/\*\*(?!<)", lines[i]) and "@file" not in lines[i]:
        e = i
        while "*/" not in lines[e]:
            e += 1
        r = e + 1
        run = []
        while r < len(lines) and lines[r].strip() and (
                lines[r].lstrip().startswith("#define") or
                not lines[r].lstrip().startswith(("/*", "#", "}"))):
            run.append(lines[r])
            r += 1
        decls = declarations(run) + sum(1 for l in run if l.lstrip().startswith("#define"))
        ends_in_macro = run and (run[-1].lstrip().startswith("#") or
                                 run[-1].rstrip().endswith("\\"))
        closable = not ends_in_macro or (r < len(lines) and not lines[r].strip())
        if run and not any("{" in l for l in run) and decls >= 2 and closable:
            lines[i] = "/**@{*/" + lines[i]
            if ends_in_macro:
                lines[r] = "/**@}*/" + lines[r]  # a blank line: the macro's text stays its own
            else:
                lines[r - 1] = lines[r - 1] + " /**@}*/"
        i = max(e, r - 1) + 1
    else:
        i += 1
sys.stdout.write("\n".join(lines))
