"""What grpc_health_probe and `grpcurl list` / `grpcurl describe` do, with Debian's python3-grpcio
and stubs grpc_tools.protoc generated from the health and reflection .proto files the npm
packages ship. Run by test/grpc/standard-services.test.ts:

    /usr/bin/python3 test/grpc/probe.py <generated-dir> <host:port>

Prints one JSON object: the health status of "", blobstore.v1.BlobService,
blobstore.v1.ClusterService and blobstore.v1.InternalService (a status name or a gRPC code name), the services that reflection
lists (v1 and v1alpha), and the methods of BlobService as the reflected file descriptor says.
"""

import json
import os
import sys

import grpc
from google.protobuf import descriptor_pb2, descriptor_pool

# health.proto sits at health/v1/ in its package; the reflection protos at grpc/reflection/...:
# those become subpackages of the installed grpc package (they import each other by that name).
sys.path.insert(0, sys.argv[1])
grpc.__path__.append(os.path.join(sys.argv[1], "grpc"))
from health.v1 import health_pb2, health_pb2_grpc  # noqa: E402
from grpc.reflection.v1 import reflection_pb2 as v1, reflection_pb2_grpc as v1_grpc  # noqa: E402
from grpc.reflection.v1alpha import reflection_pb2 as alpha, reflection_pb2_grpc as alpha_grpc  # noqa: E402


def health(stub, service):
    try:
        answer = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
    except grpc.RpcError as err:
        return err.code().name


def reflect(stub, messages, request):
    return list(stub.ServerReflectionInfo(iter([request]), timeout=5))[0]


def main():
    channel = grpc.insecure_channel(sys.argv[2])
    out = {}
    h = health_pb2_grpc.HealthStub(channel)
    out["health"] = {s: health(h, s) for s in ["", "blobstore.v1.BlobService", "blobstore.v1.ClusterService", "blobstore.v1.InternalService"]}

    r1 = v1_grpc.ServerReflectionStub(channel)
    listed = reflect(r1, v1, v1.ServerReflectionRequest(list_services=""))
    out["services_v1"] = sorted(s.name for s in listed.list_services_response.service)
    ra = alpha_grpc.ServerReflectionStub(channel)
    listed = reflect(ra, alpha, alpha.ServerReflectionRequest(list_services=""))
    out["services_v1alpha"] = sorted(s.name for s in listed.list_services_response.service)

    found = reflect(r1, v1, v1.ServerReflectionRequest(file_containing_symbol="blobstore.v1.BlobService"))
    methods = []
    for raw in found.file_descriptor_response.file_descriptor_proto:
        fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
        for service in fd.service:
            if fd.package + "." + service.name == "blobstore.v1.BlobService":
                methods = [
                    "%s(%s%s) returns (%s%s)" % (m.name, "stream " if m.client_streaming else "", m.input_type,
                                                 "stream " if m.server_streaming else "", m.output_type)
                    for m in service.method
                ]
    out["blob_service_methods"] = methods
    # What grpcurl and Python's reflection clients do next: build the files in a descriptor pool,
    # which checks them (a map entry must be named <Field>Entry, as protoc names it).
    out["pool"] = {}
    for symbol in ["blobstore.v1.BlobService", "grpc.health.v1.Health"]:
        found = reflect(r1, v1, v1.ServerReflectionRequest(file_containing_symbol=symbol))
        files = [descriptor_pb2.FileDescriptorProto.FromString(raw) for raw in found.file_descriptor_response.file_descriptor_proto]
        pool = descriptor_pool.DescriptorPool()
        added, error = set(), ""
        while len(added) < len(files) and not error:
            ready = [f for f in files if f.name not in added and all(d in added for d in f.dependency)]
            if not ready:
                error = "unresolved dependencies"
            for f in ready:
                try:
                    pool.Add(f)
                    pool.FindFileByName(f.name)
                    added.add(f.name)
                except Exception as err:  # noqa: BLE001 - the pool's complaint is the finding
                    error = str(err)
                    break
        if not error:
            try:
                pool.FindServiceByName(symbol)
            except Exception as err:  # noqa: BLE001
                error = str(err)
        out["pool"][symbol] = error or "ok"
        if symbol == "blobstore.v1.BlobService" and not error:
            labels = pool.FindMessageTypeByName("blobstore.v1.BlobMeta").fields_by_name["labels"]
            out["labels_entry"] = labels.message_type.name if labels.message_type.GetOptions().map_entry else ""
    print(json.dumps(out))


main()
