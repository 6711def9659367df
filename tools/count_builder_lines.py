#!/usr/bin/env python3
"""Counts the lines of code of C kernel files, for the size of a kernel's builder code.

What is counted, for each FILE: the lines that still hold a character other than white space
once every comment is removed (/* ... */, over any number of lines, and // to the end of the
line; the comment markers inside string and character literals are left alone), less the
preprocessor #include lines. So blank lines, comment-only lines and #include lines are not
counted; a line with code and a trailing comment counts once. Nothing else is left out: the
#define, #ifndef and #endif lines, declarations, tables and the host-side launch code all
count. A line that continues a statement counts like any other.

With --by-definition each file's count is also split by its top-level definitions (a function,
struct, enum or table: the lines from the one that opens it at brace depth 0 to the one that
closes it, named by the identifier before its first '(' or after struct/enum), in file order;
the lines outside any braces (a prototype, a one-line typedef) are listed under "(top level)".
With --exclude NAME (repeatable) the definitions of that name are left out of the total, e.g.
the launch glue that builds no kernel.

usage: count_builder_lines.py [--by-definition] [--exclude NAME]... FILE...
Prints "COUNT FILE" a line (and the breakdown, indented), then "COUNT total" for more than one
file. Exit status 0, or 2 for a usage error or a file that cannot be read.
"""
import re
import sys


def strip_comments(src):
    """src with its comments removed; a removed block comment leaves its newlines."""
    out = []
    i, n = 0, len(src)
    quote = None
    while i < n:
        c = src[i]
        if quote:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(src[i + 1])
                i += 2
                continue
            if c == quote or c == "\n":
                quote = None
            i += 1
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        else:
            if c in "\"'":
                quote = c
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(src):
    """The counted lines of src, comments removed."""
    return [l for l in strip_comments(src).split("\n")
            if l.strip() and not re.match(r"\s*#\s*include\b", l)]


def definitions(lines):
    """[(name, count)] of the top-level definitions of the counted lines, in order."""
    defs = []
    depth = 0
    cur = None  # [name, count, text so far] of the definition being read
    loose = 0
    for line in lines:
        text = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', '""', line)
        if depth == 0 and cur is None:
            cur = ["", 0, ""]
        cur[1] += 1
        cur[2] += " " + text
        opened = "{" in text
        depth += text.count("{") - text.count("}")
        if depth == 0 and (opened or "}" in text or cur[2].rstrip().endswith(";")):
            if "{" in cur[2]:
                head = cur[2].split("{", 1)[0]
                m = (re.search(r"(\w+)\s*(?:\[[^]]*\])*\s*=\s*$", head)  # a table
                     or re.search(r"(\w+)\s*\(", head)  # a function
                     or re.search(r"\b(?:struct|enum|union)\s+(\w+)", head))
                # an anonymous struct's table or typedef is named after its closing brace
                after = re.findall(r"}\s*(\w+)", cur[2])
                name = m.group(1) if m else after[-1] if after else "(anonymous enum)"
                defs.append((name, cur[1]))
            else:
                loose += cur[1]
            cur = None
    if cur is not None:
        loose += cur[1]
    if loose:
        defs.append(("(top level)", loose))
    return defs


def main(argv):
    by_def, exclude, files = False, set(), []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--by-definition":
            by_def = True
        elif a == "--exclude" and i + 1 < len(argv):
            exclude.add(argv[i + 1])
            i += 1
        elif a.startswith("-"):
            files = []
            break
        else:
            files.append(a)
        i += 1
    if not files:
        print("usage: count_builder_lines.py [--by-definition] [--exclude NAME]... FILE...",
              file=sys.stderr)
        return 2
    total = 0
    for f in files:
        try:
            with open(f, encoding="utf-8") as fh:
                lines = code_lines(fh.read())
        except OSError as e:
            print(f"count_builder_lines.py: {f}: {e.strerror}", file=sys.stderr)
            return 2
        defs = definitions(lines)
        count = sum(c for name, c in defs if name not in exclude)
        total += count
        print(f"{count} {f}")
        if by_def:
            for name, c in defs:
                print(f"  {c:4d} {name}{'  (excluded)' if name in exclude else ''}")
    if len(files) > 1:
        print(f"{total} total")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
