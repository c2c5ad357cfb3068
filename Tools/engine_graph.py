#!/usr/bin/env python3
"""engine_graph.py — which of the engine's files use which.

Reads Sources/CKVOCore/*.c and the private headers beside them (*.h). Three
kinds of edge, A -> B:
  call     A.c calls a function defined in B.c, or names a global variable
           defined there. A function defined in one file can be called from
           another only if it is not static, and then it is named ckvo_*
           (public) or ckvo__* (internal), written at the start of its
           definition's line (the engine's style); so are globals.
  include  A (a .c or a private header) includes the private header B.h.
  use      the code of header A.h (the bodies of its inline functions and
           macros, not its declarations) names a function or a global
           variable defined in B.c: whoever includes A.h depends on B.c.
Calls through function pointers (callbacks, epoch entries' free functions)
are not edges: they are values handed over, which is the point of the cut.
Prints the edges, then the cycles (strongly connected components) of the
whole picture. With --check it exits 1 when there is a cycle.
Usage: python3 Tools/engine_graph.py [--check] [dir]   (make engine-graph)
"""
import collections, os, re, sys

args = [a for a in sys.argv[1:] if a != '--check']
check = '--check' in sys.argv[1:]
root = args[0] if args else 'Sources/CKVOCore'
sources = sorted(f for f in os.listdir(root) if f.endswith('.c'))
headers = sorted(f for f in os.listdir(root) if f.endswith('.h'))

def raw(path):
    return open(path).read()

def code(text):
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)

def unit(name):
    return name[:-2] if name.endswith('.c') else name

texts = {unit(f): code(raw(os.path.join(root, f))) for f in sources}
header_texts = {f: raw(os.path.join(root, f)) for f in headers}

# What each .c defines for others: non-static functions and file-scope globals.
defined, globals_ = {}, set()
for name, text in texts.items():
    for symbol in re.findall(r'(?m)^(ckvo_\w+)\s*\(', text):
        defined[symbol] = name
    for symbol in re.findall(
            r'(?m)^(?!static|extern|#)[A-Za-z_][^\n(=;]*?\b(ckvo__\w+)\s*(?:__attribute__\(\(.*\)\))?\s*(?:=[^\n]*)?;',
            text):
        defined[symbol] = name
        globals_.add(symbol)

edges = collections.defaultdict(set)
kinds = {}
def edge(a, b, kind):
    if a != b:
        edges[a].add(b)
        kinds.setdefault((a, b), kind)

for name, text in texts.items():
    for symbol in re.findall(r'\b(ckvo_\w+)\s*\(', text) + [
            g for g in re.findall(r'\b(ckvo__\w+)\b', text) if g in globals_]:
        target = defined.get(symbol)
        if target is not None:
            edge(name, target, 'call')

include = re.compile(r'(?m)^\s*#\s*include\s+"([^"]+)"')
for f in sources:
    for h in include.findall(raw(os.path.join(root, f))):
        if h in header_texts:
            edge(unit(f), h, 'include')

def bodies(text):
    """The text inside braces at any depth plus macro definitions: code, not declarations."""
    text = code(text)
    macros = ' '.join(re.findall(r'(?m)^\s*#\s*define\s+\w+(?:\([^)]*\))?((?:[^\n]*\\\n)*[^\n]*)', text))
    inner, depth = [], 0
    for ch in re.sub(r'(?m)^\s*#[^\n]*(?:\\\n[^\n]*)*', ' ', text):
        if ch == '{':
            depth += 1
        elif ch == '}':
            depth -= 1
        elif depth > 0:
            inner.append(ch)
    return ''.join(inner) + ' ' + macros

for h, text in header_texts.items():
    for target in include.findall(text):
        if target in header_texts:
            edge(h, target, 'include')
    for symbol in re.findall(r'\b(ckvo_\w+)\b', bodies(text)):
        target = defined.get(symbol)
        if target is not None:
            edge(h, target, 'use')

units = sorted(set(texts) | set(header_texts))
print("the engine's files (A -> B: A calls a function defined in B.c, includes B.h, or, a header,")
print("names in its code a function or global defined in B.c):")
for name in units:
    shown = ['%s%s' % (b, '' if kinds[(name, b)] != 'use' else '(use)') for b in sorted(edges[name])]
    print('  %-14s -> %s' % (name, ' '.join(shown) or '-'))

index, low, stack, on, components = {}, {}, [], set(), []
def connect(v):
    index[v] = low[v] = len(index)
    stack.append(v); on.add(v)
    for w in sorted(edges[v]):
        if w not in index:
            connect(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        component = []
        while True:
            w = stack.pop(); on.discard(w); component.append(w)
            if w == v:
                break
        components.append(sorted(component))
sys.setrecursionlimit(10000)
for name in units:
    if name not in index:
        connect(name)
cycles = [c for c in components if len(c) > 1]
print('cycles: ' + ('none: the files form a DAG' if not cycles else
      '%d: ' % len(cycles) + '; '.join('{' + ' '.join(c) + '}' for c in cycles)))
sys.exit(1 if cycles and check else 0)
