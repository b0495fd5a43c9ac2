#!/usr/bin/env python3
"""Turn QEMU virt's dumped DTS into a big.LITTLE one.
usage: mkdt.py in.dts out.dts CAPS CLUSTERS [l2] [socket]
  CAPS: capacity-dmips-mhz per cpu, e.g. 578,578,578,578,1024,1024
  CLUSTERS: cpus per cluster, e.g. 4,2
  l2: add one unified L2 cache node per cluster (next-level-cache in each cpu node)
  socket: put each cluster in its own socketN node (6.x parses sockets; 5.10 does not)"""
import re, sys
src, dst = sys.argv[1], sys.argv[2]
caps = [int(c) for c in sys.argv[3].split(',')]
clusters = [int(c) for c in sys.argv[4].split(',')]
opts = sys.argv[5:]
t = open(src).read()
ph = {int(m.group(1)): m.group(2) for m in re.finditer(r'cpu@(\d+) \{\s*phandle = <(0x[0-9a-f]+)>;', t)}
assert len(ph) == len(caps) == sum(clusters), (ph, caps, clusters)
lines, cpu, cl_of = ['\t\tcpu-map {'], 0, {}
for k, n in enumerate(clusters):
    ind = '\t\t\t'
    if 'socket' in opts:
        lines.append(f'{ind}socket{k} {{'); ind += '\t'
    lines.append(f'{ind}cluster{0 if "socket" in opts else k} {{')
    for c in range(n):
        lines.append(f'{ind}\tcore{c} {{ cpu = <{ph[cpu]}>; }};'); cl_of[cpu] = k; cpu += 1
    lines.append(f'{ind}}};')
    if 'socket' in opts:
        lines.append('\t\t\t};')
lines.append('\t\t};')
if 'l2' in opts:
    for k in range(len(clusters)):
        lines.append(f'\t\tl2-cache{k} {{\n\t\t\tcompatible = "cache";\n\t\t\tcache-unified;\n\t\t\tcache-level = <2>;\n\t\t\tphandle = <{0x9000 + k:#x}>;\n\t\t}};')
t = re.sub(r'\t\tcpu-map \{.*?\n\t\t\};\n', '\n'.join(lines) + '\n', t, count=1, flags=re.S)
for i, c in enumerate(caps):
    extra = f'\n\t\t\tnext-level-cache = <{0x9000 + cl_of[i]:#x}>;' if 'l2' in opts else ''
    t = re.sub(rf'(cpu@{i} \{{\s*phandle = <0x[0-9a-f]+>;)', rf'\1\n\t\t\tcapacity-dmips-mhz = <{c}>;{extra}', t, count=1)
open(dst, 'w').write(t)
