#!/usr/bin/env python3
"""Fails when a folder's CMake file links a library of another folder along an edge that the drawing in
docs/design.md ("Which library links which") does not have, so the drawing stays true.

Read from the CMake files: which folder defines each rackwise_* library, and which libraries each folder's
targets link (tests/ is left out: tests may join faces). Read from the drawing: lines `NAME -> a, b, c (folder/)`,
where NAME is a library (or "select plugin", "rackwise (CLI)") and a, b, c are library names without the
`rackwise_` prefix ("the gRPC stubs" names the generated gRPC library)."""
import pathlib
import re
import sys

root = pathlib.Path(__file__).resolve().parent.parent
SKIP = {"tests", "build", "packaging", "deploy", "docs", "examples", "scripts"}


def cmake_files():
    for path in sorted(root.glob("*/**/CMakeLists.txt")):
        top = path.relative_to(root).parts[0]
        if top in SKIP or top.startswith("build"):
            continue
        yield top, path.read_text()


def strip_comments(text):
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


owner = {}  # library or executable -> folder
links = []  # (folder, target, dependency)
for folder, text in cmake_files():
    text = strip_comments(text)
    for m in re.finditer(r"add_(?:library|executable)\(\s*([\w.-]+)", text):
        owner.setdefault(m.group(1), folder)
    for m in re.finditer(r"rackwise_core_library\(\s*(\w+)", text):  # common/'s libraries, by a function
        owner.setdefault("rackwise_" + m.group(1), folder)
    for m in re.finditer(r"target_link_libraries\(\s*([\w.-]+)([^)]*)\)", text, re.S):
        for dep in m.group(2).split():
            if dep.startswith("rackwise_"):
                links.append((folder, m.group(1), dep))

design = (root / "docs" / "design.md").read_text()
block = re.search(r"### Which library links which.*?```\n(.*?)```", design, re.S)
if not block:
    sys.exit("check-deps: docs/design.md has no 'Which library links which' drawing")
drawn = set()  # (folder, folder)
for line in block.group(1).splitlines():
    if "->" not in line:
        continue
    left, right = line.split("->", 1)
    left = left.strip()
    where = re.search(r"\(([\w.-]+)/", right)
    source = where.group(1) if where else owner.get(left)
    if source is None:
        sys.exit(f"check-deps: the drawing names {left!r}, which no CMake file defines")
    names = re.sub(r"\(.*", "", right)
    for name in names.split(","):
        name = name.strip()
        target = "rackwise_grpc" if name == "the gRPC stubs" else "rackwise_" + name.removeprefix("rackwise_")
        if target not in owner:
            sys.exit(f"check-deps: the drawing's {left!r} links {name!r}, which no CMake file defines")
        drawn.add((source, owner[target]))

bad = []
for folder, target, dep in links:
    if dep not in owner:
        continue  # defined under tests/ (test support), or not rackwise's own
    edge = (folder, owner[dep])
    if edge[0] != edge[1] and edge not in drawn:
        bad.append(f"{folder}/CMakeLists.txt: {target} links {dep} ({owner[dep]}/), an edge the drawing lacks")
for line in bad:
    print("check-deps:", line, file=sys.stderr)
sys.exit(1 if bad else 0)
