#!/usr/bin/env python3
"""Write the Chakra seeds of the trace fuzz target (tests/fuzz/corpus/trace/hand-chakra-*.et).

A Chakra execution trace is a GlobalMetadata message, then Node messages,
each preceded by its length as a varint (mlcommons/chakra's schema, the
field numbers in workloads/chakra_et.proto). Encoded here by hand, so that
no protobuf compiler is needed: the same file serves as every rank's trace
(fuzz_trace.c), so its collectives are on the world group and it holds no
send or receive. The first byte 'c' picks the Chakra reader ('C': with ctrl_deps: wait).
"""
import os

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)

def field(num, wire, payload):
    return varint(num << 3 | wire) + payload

def vint(num, v):
    return field(num, 0, varint(v))

def lenf(num, data):
    return field(num, 2, varint(len(data)) + data)

def attr_int(name, v):
    return lenf(1, name.encode()) + vint(9, v)

def attr_str(name, s):
    return lenf(1, name.encode()) + lenf(29, s.encode())

def node(nid, ntype, name, deps=(), dur=0, attrs=(), ctrl=()):
    m = vint(1, nid) + lenf(2, name.encode()) + vint(3, ntype)
    if ctrl:
        m += lenf(4, b"".join(varint(d) for d in ctrl))  # ctrl_deps, packed
    if deps:
        m += lenf(5, b"".join(varint(d) for d in deps))  # data_deps, packed
    if dur:
        m += vint(7, dur)
    for a in attrs:
        m += lenf(10, a)
    return m

def main():
    meta = lenf(1, b"0.0.4")
    nodes = [
        node(1, 4, "fwd", dur=12),
        node(2, 4, "bwd", deps=[1], dur=7, attrs=[attr_int("num_ops", 10**9)]),
        node(3, 7, "allreduce", deps=[2], attrs=[attr_int("comm_type", 0), attr_int("comm_size", 1 << 20)]),
        node(4, 7, "allgather", deps=[3], attrs=[attr_int("comm_type", 2), attr_str("pg_name", "quad")]),
        node(5, 1, "meta", deps=[4]),
        node(6, 4, "cpu", deps=[5], dur=3, attrs=[attr_int("is_cpu_op", 1)]),
        # as Chakra's PyTorch converter writes a c10d call: a host-side collective node with no
        # comm_type, whose ctrl_deps name itself, then a kernel whose caller (99) is not in the file
        node(7, 7, "c10d::allreduce_", deps=[6], ctrl=[7], attrs=[attr_int("is_cpu_op", 1)]),
        node(8, 4, "kernel", deps=[7], ctrl=[99], dur=2),
    ]
    body = varint(len(meta)) + meta + b"".join(varint(len(n)) + n for n in nodes)
    # 'c': read as it comes (ctrl_deps ignored); 'C': with ctrl_deps: wait (node 7 then waits for itself)
    for first, name in ((b"c", "hand-chakra-world.et"), (b"C", "hand-chakra-wait.et")):
        out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "trace", name)
        with open(out, "wb") as f:
            f.write(first + body)
        print("wrote", out, len(first + body), "bytes")

if __name__ == "__main__":
    main()
