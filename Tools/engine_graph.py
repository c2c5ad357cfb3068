#!/usr/bin/env python3
"""engine_graph.py — which of the engine's files call which.

Reads Sources/CKVOCore/*.c. A function defined in one file can be called from
another only if it is not static, and then it is named ckvo_* (public) or
ckvo__* (internal), written at the start of its definition's line (the
engine's style). An edge A -> B means code in A.c calls such a function
defined in B.c. Calls through function pointers (callbacks, ck_epoch entries)
are not edges: they are values handed over, which is the point of the cut.
Prints the edges, then the cycles (strongly connected components). With
--check it exits 1 when there is a cycle.
Usage: python3 Tools/engine_graph.py [--check] [dir]   (make engine-graph)
"""
import collections, os, re, sys

args = [a for a in sys.argv[1:] if a != '--check']
check = '--check' in sys.argv[1:]
root = args[0] if args else 'Sources/CKVOCore'
sources = sorted(f for f in os.listdir(root) if f.endswith('.c'))

def code(path):
    text = open(path).read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    text = re.sub(r'//[^\n]*', ' ', text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)

texts = {f[:-2]: code(os.path.join(root, f)) for f in sources}
defined = {}
for unit, text in texts.items():
    for name in re.findall(r'(?m)^(ckvo_\w+)\s*\(', text):
        defined[name] = unit

edges = collections.defaultdict(set)
for unit, text in texts.items():
    for name in re.findall(r'\b(ckvo_\w+)\s*\(', text):
        target = defined.get(name)
        if target is not None and target != unit:
            edges[unit].add(target)

units = sorted(texts)
print("calls between the engine's files (A -> B: A calls a function defined in B.c):")
for unit in units:
    print('  %-10s -> %s' % (unit, ' '.join(sorted(edges[unit])) or '-'))

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
for unit in units:
    if unit not in index:
        connect(unit)
cycles = [c for c in components if len(c) > 1]
print('cycles: ' + ('none: the files form a DAG' if not cycles else
      '; '.join('{' + ' '.join(c) + '}' for c in cycles)))
sys.exit(1 if cycles and check else 0)
