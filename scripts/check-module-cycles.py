#!/usr/bin/env python3
"""Reports import cycles between the modules of a Rust crate.

Usage: scripts/check-module-cycles.py [--why] SRC_DIR [SRC_DIR ...]

Each SRC_DIR is one crate's `src` directory (`compiler/src interp/src`).
Prints each cycle as `crate: a -> b -> a` and exits 1 if there is any;
otherwise prints `module cycles: none in <dirs>` and exits 0. `--why` also
prints, under each cycle, the line that makes each of its edges. Exit
status 2 is a usage error.

The model, kept simple on purpose:

1. A module is a file. `lib.rs` (or `main.rs` when there is no `lib.rs`)
   is the crate root, written `crate`; `foo.rs` and `foo/mod.rs` are
   `foo`; `foo/bar.rs` is `foo::bar`. `src/bin/` and a `main.rs` beside a
   `lib.rs` are other crates and are skipped. An inline `mod x { ... }`
   counts as part of its file.
2. Comments, string and char literals are blanked, and so is every item
   under `#[cfg(test)]` (the attribute through the end of the item's
   braces or its `;`; in this codebase that is always a trailing
   `mod tests { ... }`).
3. A path names a module when it starts with `crate::`, `super::` or
   `self::`, with the name of one of the module's child modules, or with a
   name a `use` bound to a module (`use crate::scalar::{self, Scalar}`
   binds `scalar`). It is resolved segment by segment: through modules,
   then through a module's `use`s (re-exports, and the imports its
   descendants can see), so `crate::Error`, with `pub use error::Error;`
   in `lib.rs`, names `error`. The module it ends in is the target;
   passing through a module is not depending on it.
4. Module A has an edge to module B when A's code, or a `use` in A, names
   a path into B. `mod b;` is never an edge. A re-export of a descendant
   (`pub use child::X;`, `pub(crate) use self::child::X;` in a parent) is
   composition, not an edge, unless the parent's own code also names `X`.
   A `use` that only binds a module name makes no edge by itself; the
   paths the code writes through that name do.
5. Cycles are found per strongly connected component; for every edge
   inside a component the shortest cycle through it is printed, once.

This reads text, not a parsed crate: macros that build paths, `#[path]`
attributes and names brought in by glob imports of re-exports are beyond
it. A glob import (`use super::*`) is an edge to the module it names.
"""

import re
import sys
from collections import deque
from pathlib import Path

ROOT = "crate"
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(rf"(?<![\w:$]){IDENT}(?:\s*::\s*{IDENT})+")
USE_RE = re.compile(
    r"(?<![\w:])(?P<vis>pub(?:\s*\([^)]*\))?\s+)?use\s+(?P<tree>[^;]*);"
)
MOD_DECL_RE = re.compile(rf"(?<![\w:])(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+{IDENT}\s*;")
CFG_TEST_RE = re.compile(r"#\s*\[\s*cfg\s*\(\s*test\s*\)\s*\]")
KEYWORDS = {"crate", "super", "self", "Self"}


def blank(text, start, end):
    """`text` with `text[start:end]` replaced by spaces, newlines kept."""
    return text[:start] + re.sub(r"[^\n]", " ", text[start:end]) + text[end:]


def strip_comments_and_literals(text):
    """Blanks comments, string literals and char literals, keeping every
    newline so offsets still give line numbers."""
    out = list(text)
    i, n = 0, len(text)

    def wipe(a, b):
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            wipe(i, j)
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            wipe(i, j)
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            close = '"' + m.group(1)
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            wipe(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            wipe(i, j + 1)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{7f}'), not a lifetime ('a).
            m = re.compile(r"'(?:\\(?:u\{[0-9A-Fa-f]*\}|x[0-9A-Fa-f]{2}|.)|[^\\'\n])'").match(text, i)
            if m:
                wipe(i, m.end())
                i = m.end()
            else:
                i += 1
        else:
            i += 1
    return "".join(out)


def strip_cfg_test(text):
    """Blanks each `#[cfg(test)]` item: the attribute, any further
    attributes, and the item through its matching `}` or its `;`."""
    while m := CFG_TEST_RE.search(text):
        j, depth = m.end(), 0
        while j < len(text):
            if text[j] == "{":
                depth += 1
            elif text[j] == "}":
                depth -= 1
                if depth == 0:
                    j += 1
                    break
            elif text[j] == ";" and depth == 0:
                j += 1
                break
            j += 1
        text = blank(text, m.start(), j)
    return text


def expand_use_tree(tree):
    """The paths of a use tree, each a (segments, alias) pair; alias is the
    name bound (None for a glob)."""
    tree = re.sub(r"\s+", " ", tree).strip().lstrip(":").strip()

    def split_top(s):
        parts, depth, start = [], 0, 0
        for k, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:k])
                start = k + 1
        parts.append(s[start:])
        return [p.strip() for p in parts if p.strip()]

    def walk(prefix, s):
        brace = s.find("{")
        if brace >= 0:
            head = [p.strip() for p in s[:brace].split("::") if p.strip()]
            inner = s[brace + 1 : s.rindex("}")]
            for part in split_top(inner):
                yield from walk(prefix + head, part)
            return
        alias = None
        if " as " in s:
            s, alias = (x.strip() for x in s.split(" as ", 1))
        segments = [p.strip() for p in s.split("::") if p.strip()]
        if segments == ["self"]:
            segments = []
            name = prefix[-1] if prefix else None
        elif segments and segments[-1] == "*":
            name = None
        else:
            name = segments[-1] if segments else None
        yield prefix + segments, alias or name

    yield from walk([], tree)


class Crate:
    def __init__(self, src):
        self.src = src
        self.name = crate_name(src)
        self.files = {}  # module -> path
        root = "lib.rs" if (src / "lib.rs").exists() else "main.rs"
        for path in sorted(src.rglob("*.rs")):
            rel = path.relative_to(src)
            if rel.parts[0] == "bin" or (len(rel.parts) == 1 and rel.name in {"lib.rs", "main.rs"} and rel.name != root):
                continue
            if len(rel.parts) == 1 and rel.name == root:
                module = ROOT
            else:
                parts = list(rel.with_suffix("").parts)
                if parts[-1] == "mod":
                    parts.pop()
                module = "::".join(parts)
            self.files[module] = path
        self.code = {}
        self.uses = {}  # module -> [(segments, alias, is_pub, offset)]
        for module, path in self.files.items():
            text = strip_cfg_test(strip_comments_and_literals(path.read_text()))
            uses = []
            for m in USE_RE.finditer(text):
                for segments, alias in expand_use_tree(m.group("tree")):
                    uses.append((segments, alias, bool(m.group("vis")), m.start()))
                text = blank(text, m.start(), m.end())
            for m in MOD_DECL_RE.finditer(text):
                text = blank(text, m.start(), m.end())
            self.code[module] = text
            self.uses[module] = uses

    # Paths ------------------------------------------------------------

    @staticmethod
    def parent(module):
        return ROOT if "::" not in module else module.rsplit("::", 1)[0]

    def child(self, module, name):
        full = name if module == ROOT else f"{module}::{name}"
        return full if full in self.files else None

    def start(self, module, segments):
        """Where a path written in `module` begins: (module, rest), or None
        for a path that does not start inside the crate."""
        first, rest = segments[0], segments[1:]
        if first == "crate":
            return ROOT, rest
        if first == "self":
            return module, rest
        if first == "super":
            here = self.parent(module)
            while rest and rest[0] == "super":
                here, rest = self.parent(here), rest[1:]
            return here, rest
        if self.child(module, first):
            return self.child(module, first), rest
        return None

    def resolve(self, module, segments, depth=0):
        """The module a path written in `module` ends in, or None."""
        begun = self.start(module, segments)
        if begun is None or depth > 16:
            return None
        here, rest = begun
        while rest:
            nested = self.child(here, rest[0])
            if nested:
                here, rest = nested, rest[1:]
                continue
            for target, alias, _, _ in self.uses[here]:
                if alias == rest[0] and target:
                    found = self.resolve(here, target + rest[1:], depth + 1)
                    return found or here
            return here
        return here

    def module_aliases(self, module):
        """Names a `use` in `module` binds to a module, and that module."""
        aliases = {}
        for segments, alias, _, _ in self.uses[module]:
            if alias and segments and self.start(module, segments):
                target = self.resolve(module, segments)
                if target and self.is_whole_module(module, segments, target):
                    aliases[alias] = segments
        return aliases

    def is_whole_module(self, module, segments, target):
        """Whether `segments` names the module `target` itself, rather than
        an item inside it."""
        here, rest = self.start(module, segments)
        for name in rest:
            here = self.child(here, name)
            if here is None:
                return False
        return here == target

    # Edges ------------------------------------------------------------

    def edges(self):
        """{(a, b): (file, line, path text)} for every edge a -> b."""
        edges = {}

        def add(a, b, offset, text):
            if b and b != a and (a, b) not in edges:
                line = self.code[a].count("\n", 0, offset) + 1
                edges[(a, b)] = (self.files[a], line, text)

        for module in self.files:
            code = self.code[module]
            aliases = self.module_aliases(module)
            for segments, alias, is_pub, offset in self.uses[module]:
                if not segments or self.start(module, segments) is None:
                    continue
                target = self.resolve(module, segments)
                text = "use " + "::".join(segments)
                if alias is None:  # a glob
                    add(module, target, offset, text + "::*")
                elif alias in aliases:
                    continue  # a module name; the code's paths through it count
                elif is_pub and (module == ROOT or target.startswith(module + "::")):
                    if re.search(rf"(?<![\w:.]){re.escape(alias)}\b", code):
                        add(module, target, offset, text + " (re-exported and used)")
                else:
                    add(module, target, offset, text)
            for m in PATH_RE.finditer(code):
                segments = [s.strip() for s in m.group(0).split("::")]
                if segments[0] in aliases:
                    segments = aliases[segments[0]] + segments[1:]
                if segments[0] == "Self" or self.start(module, segments) is None:
                    continue
                add(module, self.resolve(module, segments), m.start(), m.group(0))
        return edges


def crate_name(src):
    manifest = src.parent / "Cargo.toml"
    if manifest.exists():
        m = re.search(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"', manifest.read_text(), re.M | re.S)
        if m:
            return m.group(1)
    return src.resolve().parent.name


def components(nodes, graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return found


def shortest_path(graph, source, target, allowed):
    previous, queue = {source: None}, deque([source])
    while queue:
        v = queue.popleft()
        if v == target:
            path = []
            while v is not None:
                path.append(v)
                v = previous[v]
            return path[::-1]
        for w in sorted(graph.get(v, ())):
            if w in allowed and w not in previous:
                previous[w] = v
                queue.append(w)
    return None


def cycles(crate):
    """(cycle, edges): each cycle a list of modules ending where it starts."""
    edges = crate.edges()
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
    found, seen = [], set()
    for component in components(crate.files, graph):
        for a, b in sorted(edges):
            if a in component and b in component:
                cycle = [a] + shortest_path(graph, b, a, component)
                body = cycle[:-1]
                k = body.index(min(body))
                canonical = tuple(body[k:] + body[:k])
                if canonical not in seen:
                    seen.add(canonical)
                    found.append(list(canonical) + [canonical[0]])
    return sorted(found, key=lambda c: (len(c), c)), edges


def main(argv):
    why = "--why" in argv
    dirs = [a for a in argv if a != "--why"]
    if not dirs or any(a.startswith("-") for a in dirs):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    missing = [d for d in dirs if not Path(d).is_dir()]
    if missing:
        print(f"not a directory: {', '.join(missing)}", file=sys.stderr)
        return 2
    any_cycle = False
    for d in dirs:
        crate = Crate(Path(d))
        found, edges = cycles(crate)
        for cycle in found:
            any_cycle = True
            print(f"{crate.name}: {' -> '.join(cycle)}")
            if why:
                for a, b in zip(cycle, cycle[1:]):
                    path, line, text = edges[(a, b)]
                    print(f"    {a} -> {b}: {path}:{line}: {text}")
    if not any_cycle:
        print(f"module cycles: none in {' '.join(dirs)}")
    return 1 if any_cycle else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
