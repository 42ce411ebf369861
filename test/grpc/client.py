"""An independent BlobService client: Debian's python3-grpcio with stubs that grpc_tools.protoc
generated from the repo's .proto files. Run by test/grpc/python-client.test.ts:

    /usr/bin/python3 test/grpc/client.py <generated-dir> <host:port>

Exercises put, get, stat, list, delete, put-stream and get-stream, checks bytes and status
codes, prints one JSON line with what it checked, exits non-zero on the first mismatch.
"""

import hashlib
import json
import sys

import grpc

sys.path.insert(0, sys.argv[1])
from blobstore.v1 import blob_pb2, blob_pb2_grpc  # noqa: E402

MiB = 1024 * 1024
checked = []


def check(name, condition, detail=""):
    if not condition:
        print(json.dumps({"ok": False, "failed": name, "detail": str(detail)}))
        sys.exit(1)
    checked.append(name)


def status_of(fn):
    try:
        fn()
    except grpc.RpcError as err:
        return err.code(), err.details()
    return grpc.StatusCode.OK, ""


def pattern(size, seed):
    out = bytearray()
    block = hashlib.sha256(seed.to_bytes(4, "little")).digest()
    while len(out) < size:
        block = hashlib.sha256(block).digest()
        out += block
    return bytes(out[:size])


def main():
    channel = grpc.insecure_channel(
        sys.argv[2],
        options=[("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)],
    )
    stub = blob_pb2_grpc.BlobServiceStub(channel)
    Policy = blob_pb2.ReplicationPolicy

    # Unary put and get, byte exact, with labels and policy.
    data = pattern(4096 + 3, 1)
    put = stub.Put(blob_pb2.PutRequest(data=data, policy=Policy.Value("REPLICATION_POLICY_NONE"), labels={"lang": "python"}))
    check("put.size", put.size == len(data), put.size)
    check("put.id 16 bytes", len(put.id.id) == 16, len(put.id.id))
    got = stub.Get(blob_pb2.GetRequest(id=put.id))
    check("get.data", got.data == data)
    check("get.meta.size", got.meta.size == len(data))
    check("get.meta.labels", dict(got.meta.labels) == {"lang": "python"}, dict(got.meta.labels))
    check("get.meta.policy", got.meta.policy == Policy.Value("REPLICATION_POLICY_NONE"), got.meta.policy)
    check("get.meta.checksum", len(got.meta.checksum) == 32 and got.meta.checksum[:16] == put.id.id)
    check("get.meta.created_at ns", got.meta.created_at > 1_600_000_000 * 10**9, got.meta.created_at)

    # Dedup: the same bytes give the same id.
    again = stub.Put(blob_pb2.PutRequest(data=data))
    check("dedup", again.id.id == put.id.id)

    # Stat, present and missing.
    stat = stub.Stat(blob_pb2.StatRequest(id=put.id))
    check("stat.exists", stat.exists and stat.meta.size == len(data))
    missing = stub.Stat(blob_pb2.StatRequest(id=blob_pb2.BlobID(id=b"\x01" * 16)))
    check("stat missing", not missing.exists and not missing.HasField("meta"))

    # Status codes.
    code, details = status_of(lambda: stub.Get(blob_pb2.GetRequest(id=blob_pb2.BlobID(id=b"\x02" * 16))))
    check("get missing NOT_FOUND", code == grpc.StatusCode.NOT_FOUND, code)
    code, details = status_of(lambda: stub.Get(blob_pb2.GetRequest(id=blob_pb2.BlobID(id=b"short"))))
    check("bad id INVALID_ARGUMENT", code == grpc.StatusCode.INVALID_ARGUMENT and "invalid blob ID" in details, (code, details))
    code, details = status_of(lambda: stub.Put(blob_pb2.PutRequest(data=b"x", policy=Policy.Value("REPLICATION_POLICY_EC42"))))
    check("EC42 FAILED_PRECONDITION", code == grpc.StatusCode.FAILED_PRECONDITION and "need 6" in details, (code, details))
    code, details = status_of(lambda: stub.Put(blob_pb2.PutRequest(data=b"x", labels={"bad key": "v"})))
    check("bad label INVALID_ARGUMENT", code == grpc.StatusCode.INVALID_ARGUMENT, (code, details))

    # Streamed put of a multi-chunk blob, then a streamed get.
    big = pattern(5 * MiB + 123, 2)

    def chunks():
        step = 700 * 1024
        for at in range(0, len(big), step):
            piece = big[at:at + step]
            first = at == 0
            yield blob_pb2.PutChunk(
                data=piece,
                final=at + step >= len(big),
                policy=Policy.Value("REPLICATION_POLICY_NONE") if first else 0,
                labels={"via": "python-stream"} if first else {},
            )

    streamed = stub.PutStream(chunks())
    check("put-stream.size", streamed.size == len(big), streamed.size)
    parts = list(stub.GetStream(blob_pb2.GetStreamRequest(id=streamed.id)))
    check("get-stream bytes", b"".join(p.data for p in parts) == big)
    check("get-stream chunk size, the spec's 1 MB", max(len(p.data) for p in parts) <= 1_000_000)
    check("get-stream final", parts[-1].final and not any(p.final for p in parts[:-1]))

    # A put stream without a final chunk: INTERNAL, nothing stored.
    def unfinished():
        yield blob_pb2.PutChunk(data=b"never finished")

    code, details = status_of(lambda: stub.PutStream(unfinished()))
    check("put-stream without final INTERNAL", code == grpc.StatusCode.INTERNAL and "final" in details, (code, details))

    # Interleaved ids: INVALID_ARGUMENT.
    def interleaved():
        yield blob_pb2.PutChunk(id=blob_pb2.BlobID(id=b"\x03" * 16), data=b"a")
        yield blob_pb2.PutChunk(id=blob_pb2.BlobID(id=b"\x04" * 16), data=b"b", final=True)

    code, details = status_of(lambda: stub.PutStream(interleaved()))
    check("interleaved INVALID_ARGUMENT", code == grpc.StatusCode.INVALID_ARGUMENT, (code, details))

    # List with cursor paging: every id exactly once.
    seen = []
    cursor = b""
    while True:
        page = stub.List(blob_pb2.ListRequest(cursor=cursor, limit=1))
        seen += [i.id for i in page.ids]
        if not page.has_more:
            check("list last page has no cursor", page.next_cursor == b"")
            break
        cursor = page.next_cursor
    check("list ids", sorted(seen) == sorted([put.id.id, streamed.id.id]), [s.hex() for s in seen])

    # Delete: deleted true, then gone.
    check("delete", stub.Delete(blob_pb2.DeleteRequest(id=put.id)).deleted)
    check("delete again", stub.Delete(blob_pb2.DeleteRequest(id=put.id)).deleted)
    code, _ = status_of(lambda: stub.Get(blob_pb2.GetRequest(id=put.id)))
    check("deleted NOT_FOUND", code == grpc.StatusCode.NOT_FOUND, code)

    # Deadlines are honoured.
    code, _ = status_of(lambda: list(stub.GetStream(blob_pb2.GetStreamRequest(id=streamed.id), timeout=0.001)))
    check("tiny deadline DEADLINE_EXCEEDED", code == grpc.StatusCode.DEADLINE_EXCEEDED, code)

    channel.close()
    print(json.dumps({"ok": True, "checked": checked}))


if __name__ == "__main__":
    main()
