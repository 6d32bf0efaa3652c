#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check-docs - the manual and the tool cannot drift apart.

  - every command `traceagent --help` lists has its page,
    docs/traceagent-COMMAND.md, and docs/traceagent.md names it;
  - each page follows the page contract (docs/meson.build): "# traceagent
    x", one line saying what it is, then its "## " sections in the order
    Synopsis, Description, Options, Environment, Examples, Exit status,
    See also;
  - per command, the options (`-x`, `--long`) its --help lists and the
    options leading the bullets of its page's "## Options" section are the
    same, both ways (and `traceagent --help` against docs/traceagent.md);
  - the TRACEAGENT_* variables the sources read and the bullets of
    docs/traceagent-settings.md are the same, both ways;
  - given the built man pages (--man-dir), there is one per page and each
    renders with `MANWIDTH=80 man --warnings -l PAGE` with nothing on
    stderr (groff's warnings of a man page's usual faults: a table wider
    than the page, a line that cannot be broken, an unknown macro).

Every mismatch is one line naming the option or variable and where it is
(the command's --help, or FILE:LINE); exits 1 if there is any.

What counts as an option
  In --help: the words `-x` and `--long` (a value after `=`, `[=`, or a
  space is not part of it) of the usage lines (from "usage:" to the first
  empty line) and of the option lines: a line whose first character after
  one to four spaces of indentation is '-' (the left column of the option
  table; descriptions and their continuation lines are indented further
  or start with a letter, so "like tail -f" in a description is not an
  option).  In a page: the same words inside the code spans that lead a
  top-level bullet of "## Options" (`- `-o FILE`, `--output=FILE`: ...`);
  code spans later in the bullet's text, and nested bullets, are not
  options.

How the variables the sources read are found
  The agent reads its settings through helpers that take the variable's
  name (setting_env, size_setting, env_set) and through macros
  (TA_DUMP_FILE_VAR), the command through getenv and secure_getenv.
  Following calls is fragile: a new helper would hide what it reads.  A
  name is read, whatever the helper, from a C string literal that is the
  name and nothing else ("TRACEAGENT_MODE", or "TRACEAGENT_MODE=" as the
  agent matches it in environ), so every such literal in agent/, loader/,
  analyzer/, format/ and include/ (comments left out) is a variable the
  tool reads.  A literal that only mentions a name in a message
  ("TRACEAGENT_PATCH ignored") is not counted: that name is read
  elsewhere through its own literal.  A getenv/secure_getenv call whose
  argument is a TRACEAGENT_ literal is checked to be among them (the
  extraction missing the plainest form would be a bug of this script).
  The tests' and scripts' variables are not the tool's.

Usage: check-docs.py --traceagent EXE [--source TREE] [--man-dir DIR]
       check-docs.py --self-test --traceagent EXE [--source TREE]
  --man-dir: the folder of the built man pages (BUILD/docs); without it,
  the man pages are not checked (a build without pandoc).
  --self-test: copies the pages and sources to a scratch folder, plants an
  option in a command's --help (through a wrapper of EXE), an option in a
  page, a variable read in the agent, a variable in the settings page and
  a section out of order, and checks that each is named as a mismatch and
  nothing else is; and that a man page man warns about is caught.
"""

import argparse
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

SECTIONS = ["Synopsis", "Description", "Options", "Environment", "Examples",
            "Exit status", "See also"]
# Pages that are not a command's, and their man sections.
EXTRA_PAGES = {"traceagent": "1", "traceagent-settings": "7", "traceagent-api": "3",
               "traceagent-symbols": "7"}
SOURCE_PARTS = ["agent", "loader", "analyzer", "format", "include"]

OPT_RE = re.compile(r"(?<![\w-])(--[A-Za-z][A-Za-z0-9-]*|-[A-Za-z])(?![A-Za-z0-9_-])")
VAR_LITERAL_RE = re.compile(r'"(TRACEAGENT_[A-Z0-9_]+)=?"')
GETENV_RE = re.compile(r'\b(?:secure_)?getenv\s*\(\s*"(TRACEAGENT_[A-Z0-9_]+)"')
BULLET_RE = re.compile(r"^[-*] +((?:`[^`]+`(?:\s*,\s*|\s+or\s+|\s*/\s*|\s+)?)+)")
CODE_RE = re.compile(r"`([^`]+)`")


# ---- --help ------------------------------------------------------------------

def run_help(exe, cmd):
    """The output of `EXE [CMD] --help`, with its exit status."""
    argv = [exe] + ([cmd] if cmd else []) + ["--help"]
    p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60, env=dict(os.environ, LC_ALL="C"))
    return p.returncode, p.stdout.decode("utf-8", "replace")


def help_options(text):
    """{option: the --help line that lists it first}."""
    found = {}
    in_usage = False
    for line in text.splitlines():
        if line.lstrip().startswith("usage:"):
            in_usage = True
        elif not line.strip():
            in_usage = False
        if in_usage:
            words = line
        elif re.match(r"^ {1,4}-", line):
            # The left column: up to the first gap of two spaces after
            # the option words.
            words = re.split(r"(?<=\S)\s{2,}", line.strip(), maxsplit=1)[0]
        else:
            continue
        for m in OPT_RE.finditer(words):
            found.setdefault(m.group(1), line.strip())
    return found


def commands_of(text):
    """The commands listed under "commands:" of `traceagent --help`."""
    cmds = []
    on = False
    for line in text.splitlines():
        if line.strip() == "commands:":
            on = True
            continue
        if on:
            m = re.match(r"^  ([a-z][a-z0-9-]*)\s+\S", line)
            if not m:
                break
            cmds.append(m.group(1))
    return cmds


# ---- pages -------------------------------------------------------------------

def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def section_lines(lines, title):
    """(line number, line) of the "## title" section, to the next "## "."""
    out = []
    on = False
    fence = False
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            fence = not fence
        if not fence and line.startswith("## "):
            on = line[3:].strip().lower() == title.lower()
            continue
        if on:
            out.append((n, line))
    return out


def bullet_words(lines, title, pattern):
    """{word: line number} of the words matching pattern inside the code
    spans that lead each top-level bullet of section title (the whole page
    when title is None)."""
    found = {}
    items = section_lines(lines, title) if title else list(enumerate(lines, 1))
    for n, line in items:
        m = BULLET_RE.match(line)
        if not m:
            continue
        for code in CODE_RE.findall(m.group(1)):
            for w in pattern.finditer(code):
                found.setdefault(w.group(1), n)
    return found


def check_contract(path, name, problems):
    """The page's title, its one line, and the order of its sections."""
    lines = read_lines(path)
    rel = os.path.basename(path)
    text = [(n, l) for n, l in enumerate(lines, 1)]
    if not lines or not lines[0].startswith("# "):
        problems.append(f"docs/{rel}:1: does not start with '# {name.replace('-', ' ', 1)}'")
        return
    title = lines[0][2:].strip()
    if title.replace(" ", "-") != name:
        problems.append(f"docs/{rel}:1: title '{title}', not '{name.replace('-', ' ', 1)}'")
    para = []
    for n, l in text[1:]:
        if not l.strip():
            if para:
                break
            continue
        if l.startswith("#"):
            break
        para.append((n, l))
    if len(para) != 1:
        where = para[0][0] if para else 2
        problems.append(f"docs/{rel}:{where}: the title is to be followed by ONE line saying "
                        f"what it is (the man page's NAME), not {len(para)}")
    seen = []
    fence = False
    for n, l in text:
        if l.startswith("```"):
            fence = not fence
        if fence or not l.startswith("## "):
            continue
        s = l[3:].strip()
        if s not in SECTIONS:
            problems.append(f"docs/{rel}:{n}: section '## {s}' is none of: " + ", ".join(SECTIONS))
            continue
        if seen and SECTIONS.index(s) <= SECTIONS.index(seen[-1]):
            problems.append(f"docs/{rel}:{n}: section '## {s}' after '## {seen[-1]}' "
                            f"(the order: {', '.join(SECTIONS)})")
        seen.append(s)
    for s in ("Synopsis", "Description", "See also"):
        if s not in seen:
            problems.append(f"docs/{rel}: no '## {s}' section")


def compare_options(cmd, text, page, problems):
    label = f"traceagent {cmd} --help" if cmd else "traceagent --help"
    rel = "docs/" + os.path.basename(page)
    have = help_options(text)
    documented = bullet_words(read_lines(page), "Options", OPT_RE)
    for opt in sorted(set(have) - set(documented)):
        problems.append(f"{opt}: listed by `{label}` ('{have[opt]}'), "
                        f"not documented in {rel} (no bullet of '## Options' starts with it)")
    for opt in sorted(set(documented) - set(have)):
        problems.append(f"{opt}: documented in {rel}:{documented[opt]} ('## Options'), "
                        f"not listed by `{label}`")
    return len(have)


# ---- variables ---------------------------------------------------------------

def strip_comments(src):
    """C source without its comments; string and character literals kept."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(src[i:j + 1])
            i = j + 1
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))  # keep line numbers
            i = j
        elif src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def source_vars(tree, problems):
    """{variable: FILE:LINE of its first literal}."""
    found = {}
    called = {}
    for part in SOURCE_PARTS:
        for root, dirs, files in os.walk(os.path.join(tree, part)):
            dirs.sort()
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                path = os.path.join(root, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    src = strip_comments(fh.read())
                rel = os.path.relpath(path, tree)
                for m in VAR_LITERAL_RE.finditer(src):
                    line = src.count("\n", 0, m.start()) + 1
                    found.setdefault(m.group(1), f"{rel}:{line}")
                for m in GETENV_RE.finditer(src):
                    called.setdefault(m.group(1), rel)
    for var in sorted(set(called) - set(found)):
        problems.append(f"{var}: read by getenv in {called[var]} but not found as a literal "
                        f"(check-docs.py's extraction is wrong)")
    return found


def compare_vars(tree, problems):
    page = os.path.join(tree, "docs", "traceagent-settings.md")
    if not os.path.isfile(page):
        return 0
    read = source_vars(tree, problems)
    documented = bullet_words(read_lines(page), None, re.compile(r"^(TRACEAGENT_[A-Z0-9_]+)"))
    for var in sorted(set(read) - set(documented)):
        problems.append(f"{var}: read by the sources ({read[var]}), not documented in "
                        f"docs/traceagent-settings.md (no bullet starts with it)")
    for var in sorted(set(documented) - set(read)):
        problems.append(f"{var}: documented in docs/traceagent-settings.md:{documented[var]}, "
                        f"read by no source of {', '.join(SOURCE_PARTS)}")
    return len(read)


# ---- man pages ---------------------------------------------------------------

def check_man(pages, man_dir, problems):
    """Each page written has its man page, which renders without a word on
    stderr (pages is {name: section} of the pages written)."""
    if not shutil.which("man"):
        print("check-docs: man is not installed: the man pages' rendering is not checked")
        return
    for name, section in sorted(pages.items()):
        page = os.path.join(man_dir, f"{name}.{section}")
        if not os.path.isfile(page):
            problems.append(f"{name}({section}): no man page {page} (docs/meson.build's "
                            f"list of pages)")
            continue
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MANPAGER="cat", PAGER="cat")
        p = subprocess.run(["man", "--warnings", "-l", page], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
        err = p.stderr.decode("utf-8", "replace").strip()
        out = p.stdout.decode("utf-8", "replace")
        if p.returncode != 0 or err:
            first = err.splitlines()[:3]
            problems.append(f"{name}({section}): `MANWIDTH=80 man --warnings -l {page}` exit status "
                            f"{p.returncode}, stderr: " + " | ".join(first))
        elif "NAME" not in out or f"{name} - " not in " ".join(out.split()):
            problems.append(f"{name}({section}): the rendered page has no NAME "
                            f"'{name} - ...'")


# ---- the check ---------------------------------------------------------------

def check(exe, tree, man_dir, counts=None):
    """The mismatches, and the commands; counts (a dict) gets how many
    options and variables were compared."""
    counts = {} if counts is None else counts
    counts.update(options=0, variables=0)
    problems = []
    docs = os.path.join(tree, "docs")
    status, top = run_help(exe, None)
    if status != 0:
        problems.append(f"`traceagent --help`: exit status {status}")
    cmds = [c for c in commands_of(top) if c != "help"]
    if not cmds:
        problems.append("`traceagent --help` lists no commands under 'commands:'")
    pages = dict(EXTRA_PAGES)
    for c in cmds:
        pages[f"traceagent-{c}"] = "1"
    for name in sorted(pages):
        path = os.path.join(docs, name + ".md")
        if not os.path.isfile(path):
            problems.append(f"docs/{name}.md: no such page")
            continue
        check_contract(path, name, problems)
    main = os.path.join(docs, "traceagent.md")
    if os.path.isfile(main):
        counts["options"] += compare_options(None, top, main, problems)
        text = "\n".join(read_lines(main))
        for c in cmds:
            if f"traceagent-{c}(1)" not in text:
                problems.append(f"{c}: docs/traceagent.md does not name traceagent-{c}(1)")
    for c in cmds:
        page = os.path.join(docs, f"traceagent-{c}.md")
        status, text = run_help(exe, c)
        if status != 0:
            problems.append(f"`traceagent {c} --help`: exit status {status}, not 0")
        if os.path.isfile(page):
            counts["options"] += compare_options(c, text, page, problems)
    counts["variables"] = compare_vars(tree, problems)
    if man_dir:
        written = {n: s for n, s in pages.items() if os.path.isfile(os.path.join(docs, n + ".md"))}
        check_man(written, man_dir, problems)
    return problems, cmds


# ---- the self-test -----------------------------------------------------------

def self_test(exe, tree):
    """Plants a mismatch of each kind in a copy; each must be named."""
    work = tempfile.mkdtemp(prefix="check-docs-")
    try:
        copy = os.path.join(work, "tree")
        for part in ["docs"] + SOURCE_PARTS:
            src = os.path.join(tree, part)
            if os.path.isdir(src):
                shutil.copytree(src, os.path.join(copy, part))
        os.makedirs(os.path.join(copy, "docs"), exist_ok=True)
        cmds = commands_of(run_help(exe, None)[1])
        cmd = "report" if "report" in cmds else cmds[0]
        page = os.path.join(copy, "docs", f"traceagent-{cmd}.md")
        settings = os.path.join(copy, "docs", "traceagent-settings.md")
        # A page not written yet: a bare one, so that the plants have a
        # page to go into (its own mismatches are in the baseline).
        for path, name in ((page, f"traceagent {cmd}"), (settings, "traceagent settings")):
            if not os.path.isfile(path):
                with open(path, "w") as f:
                    f.write(f"# {name}\n\nx\n\n## Synopsis\n\n## Description\n\n"
                            f"## Options\n\n## See also\n")
        base = set(check(exe, copy, None)[0])

        # A wrapper of the command whose `CMD --help` lists one more
        # option, as an option added to the code without its page.
        wrapper = os.path.join(work, "traceagent")
        with open(wrapper, "w") as f:
            f.write(f"""#!/bin/sh
if [ "$1" = {cmd} ] && [ "$2" = --help ]; then
	"{exe}" "$@"; s=$?
	echo "  --planted-undocumented   an option without its documentation"
	exit $s
fi
exec "{exe}" "$@"
""")
        os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)
        lines = read_lines(page)
        if "## Options" not in lines:
            print(f"check-docs --self-test: docs/traceagent-{cmd}.md has no '## Options'")
            return 1
        at = lines.index("## Options") + 1
        lines[at:at] = ["", "- `--planted-stale`: an option the command does not have"]
        lines.append("## Synopsis")
        with open(page, "w") as f:
            f.write("\n".join(lines) + "\n")
        with open(os.path.join(copy, "agent", "planted.c"), "w") as f:
            f.write('#include <stdlib.h>\n/* "TRACEAGENT_PLANTED_COMMENT" */\n'
                    'const char *ta_planted(void);\n'
                    'const char *ta_planted(void) { return getenv("TRACEAGENT_PLANTED_READ"); }\n')
        with open(settings, "a") as f:
            f.write("\n- `TRACEAGENT_PLANTED_DOC`: a variable nothing reads\n")
        got = check(wrapper, copy, None)[0]
        new = [p for p in got if p not in base]

        plants = {
            "an option in --help, not in the page":
                f"--planted-undocumented: listed by `traceagent {cmd} --help`",
            "an option in the page, not in --help":
                f"--planted-stale: documented in docs/traceagent-{cmd}.md:",
            "a variable read by the agent, not in the settings page":
                "TRACEAGENT_PLANTED_READ: read by the sources (agent/planted.c:4)",
            "a variable in the settings page, read by no source":
                "TRACEAGENT_PLANTED_DOC: documented in docs/traceagent-settings.md:",
            "a section out of order":
                f"docs/traceagent-{cmd}.md:{len(lines)}: section '## Synopsis' after",
        }
        failed = 0
        for what, want in plants.items():
            ok = any(p.startswith(want) for p in new)
            print(f"check-docs --self-test: {what}: {'caught' if ok else 'NOT CAUGHT'}")
            failed += not ok
        for p in got:
            if "TRACEAGENT_PLANTED_COMMENT" in p:
                print(f"check-docs --self-test: a name in a comment counted as read: {p}")
                failed += 1
        for p in new:
            if not any(p.startswith(w) for w in plants.values()):
                print(f"check-docs --self-test: not planted: {p}")
                failed += 1

        # A man page that man warns about: an unknown macro, and a line
        # too long to break.
        if shutil.which("man"):
            man_dir = os.path.join(work, "man")
            os.mkdir(man_dir)
            with open(os.path.join(man_dir, "traceagent-planted.1"), "w") as f:
                f.write('.TH "TRACEAGENT-PLANTED" "1"\n.SH NAME\ntraceagent-planted - x\n'
                        '.SH DESCRIPTION\n.UNKNOWNMACRO\n' + "x" * 200 + "\n")
            got = []
            check_man({"traceagent-planted": "1"}, man_dir, got)
            ok = len(got) == 1 and got[0].startswith("traceagent-planted(1): `MANWIDTH=80 man")
            print(f"check-docs --self-test: a man page man warns about: "
                  f"{'caught' if ok else 'NOT CAUGHT'}")
            failed += not ok
        else:
            print("check-docs --self-test: man is not installed: its warnings are not tried")
        return 1 if failed else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description="the manual against --help and the sources")
    ap.add_argument("--traceagent", required=True)
    ap.add_argument("--source", default=os.path.dirname(os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))))
    ap.add_argument("--man-dir")
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    exe = os.path.abspath(a.traceagent)
    if a.self_test:
        return self_test(exe, a.source)
    counts = {}
    problems, cmds = check(exe, a.source, a.man_dir, counts)
    for p in problems:
        print(p)
    if problems:
        print(f"check-docs: {len(problems)} mismatch{'es' if len(problems) > 1 else ''} "
              f"between the manual (docs/) and the tool")
        return 1
    print(f"check-docs: {len(cmds)} commands: their --help and pages agree on "
          f"{counts['options']} options; the settings page names the {counts['variables']} "
          f"TRACEAGENT_* variables the sources read"
          + ("; every man page renders" if a.man_dir else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
