#!/usr/bin/env python3
"""Count SASS instructions around the HGMMAs of a cubin, without a disassembler.

    nvcc -arch=sm_90a -cubin -o K.cubin K.cu      (K.cu: a golden case with its prelude inlined)
    python3 tools/cubin_hgmma_gaps.py K.cubin

For each .text section: the instruction count, the positions of the HGMMA instructions
(opcode 0x9f0 in the low 12 bits of each 16-byte instruction), and, from the last
SYNCS.PHASECHK (0x5a7) before the first HGMMA, the instructions to the last HGMMA and to the
third BRA (0x947) after it (the consumer's k-block when the loop has that shape; compare
variants of one kernel only).
"""
import struct
import sys

# minimal ELF64 section reader: find .text.<kernel>, count 16-byte instructions between HGMMA (opcode 0x9f0)
d=open(sys.argv[1],'rb').read()
shoff=struct.unpack_from('<Q',d,0x28)[0]; shentsize,shnum,shstrndx=struct.unpack_from('<HHH',d,0x3a)
secs=[struct.unpack_from('<IIQQQQIIQQ',d,shoff+i*shentsize) for i in range(shnum)]
strtab=secs[shstrndx]; so=strtab[4]
name=lambda off: d[so+off:d.index(b'\0',so+off)].decode()
for s in secs:
    n=name(s[0])
    if n.startswith('.text.'):
        t=d[s[4]:s[4]+s[5]]; ins=[struct.unpack_from('<QQ',t,i) for i in range(0,len(t),16)]
        ops=[lo & 0xfff for lo,hi in ins]
        hg=[i for i,o in enumerate(ops) if o==0x9f0]
        gaps=[hg[i+1]-hg[i] for i in range(len(hg)-1)]
        print(n, 'instructions', len(ins), 'HGMMA at', hg, 'gaps', gaps)
        # the consumer loop: from the last PHASECHK (0x5a7) before the first HGMMA to the first backward BRA after the last HGMMA
        first=hg[0]; pc=max(i for i in range(first) if ops[i]==0x5a7)
        # loop head: search backward from pc for a branch target... approximate: count pc..last HGMMA + to next BRA(0x947) after DEPBAR
        last=hg[-1]; j=last
        nb=0
        while j < len(ops):
            if ops[j]==0x947: nb+=1
            if nb==3: break
            j+=1
        print('  PHASECHK at', pc, 'wait->last HGMMA', last-pc, 'to 3rd BRA after', j-pc)
