#!/usr/bin/env python3
"""Code size of a wasm module by crate, from its name section (before wasm-bindgen and wasm-opt,
which strip names): where the web app's page bundle goes. Used for BENCHMARKS.md, "Web app".

    python3 scripts/wasm_sizes.py target/web/wasm32-unknown-unknown/release/app.wasm
"""
import sys, re, collections
data = open(sys.argv[1], 'rb').read()
def leb(b, i):
    r = s = 0
    while True:
        x = b[i]; i += 1; r |= (x & 0x7f) << s; s += 7
        if x < 0x80: return r, i
i = 8; sections = []
while i < len(data):
    sid = data[i]; i += 1
    size, i = leb(data, i); sections.append((sid, i, size)); i += size
imports = 0; bodies = []; names = {}; data_size = 0
for sid, off, size in sections:
    if sid == 2:
        n, j = leb(data, off)
        for _ in range(n):
            l, j = leb(data, j); j += l
            l, j = leb(data, j); j += l
            kind = data[j]; j += 1
            if kind == 0: _, j = leb(data, j); imports += 1
            elif kind == 1: j += 1; f = data[j]; j += 1; _, j = leb(data, j); j = leb(data, j)[1] if f & 1 else j
            elif kind == 2: f = data[j]; j += 1; _, j = leb(data, j); j = leb(data, j)[1] if f & 1 else j
            elif kind == 3: j += 2
    if sid == 10:
        n, j = leb(data, off)
        for _ in range(n):
            l, j = leb(data, j); bodies.append(l); j += l
    if sid == 11: data_size += size
    if sid == 0:
        l, j = leb(data, off); name = data[j:j+l].decode(errors='replace'); j += l
        if name == 'name':
            end = off + size
            while j < end:
                sub = data[j]; j += 1; sl, j = leb(data, j); nxt = j + sl
                if sub == 1:
                    n, k = leb(data, j)
                    for _ in range(n):
                        idx, k = leb(data, k); l, k = leb(data, k); names[idx] = data[k:k+l].decode(errors='replace'); k += l
                j = nxt
def crate(name):
    v0 = re.match(r'_R.*?C(?:s[0-9A-Za-z]*_)?(\d+)', name)
    m = re.match(r'_ZN(\d+)', name)
    if v0 and not m:
        n = int(v0.group(1)); return name[v0.end():v0.end() + n]
    if m:
        n = int(m.group(1)); c = name[len(m.group(0)):len(m.group(0))+n]
    else:
        c = re.split(r'::|<| ', name.lstrip('<&*'))[0]
    c = re.sub(r'\.\..*', '', c)
    # `<T as Trait>` and `<&T as ...>` impls: the crate of the type, else of the trait.
    c = re.sub(r'^(_?\$LT\$)+', '', c)
    c = re.sub(r'^(\$RF\$|mut\$u20\$)+', '', c)
    c = re.sub(r'^(\[?T\]?|\$LP\$\$RP\$)\$u20\$as\$u20\$', '', c)
    return re.split(r'\$', c)[0] or '?'
by = collections.Counter()
for k, size in enumerate(bodies):
    by[crate(names.get(k + imports, '?'))] += size
total = sum(bodies)
print(f'code {total/1024:.0f} KB, data {data_size/1024:.0f} KB, {len(names)} names')
for c, s in by.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 25): print(f'{s/1024:8.0f} KB {100*s/total:5.1f}%  {c}')
