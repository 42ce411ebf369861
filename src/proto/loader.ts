/**
 * The .proto files under src/proto are the source of truth for the gRPC services; they are loaded
 * at run time with @grpc/proto-loader. Decoded messages keep the .proto's snake_case names, bytes
 * are Buffers (views of the received message, no copy), enums are numbers (parsePolicy takes
 * them as they are), 64-bit integers are decimal strings on the way out of a decoder (lossless;
 * encoders accept numbers or strings), and absent fields stay undefined (no defaults allocated).
 *
 * The server's definitions differ from proto-loader's in two ways: a request that is not a
 * well-formed message (wrong wire types, truncation, invalid UTF-8) decodes to a
 * MalformedMessage instead of throwing, so the handler answers INVALID_ARGUMENT where grpc-js
 * would answer INTERNAL; and a DeferredMessage response encodes itself when grpc-js frames it.
 */
import { join } from 'node:path';
import type { ServiceDefinition } from '@grpc/grpc-js';
import { type Options, type PackageDefinition, loadSync } from '@grpc/proto-loader';
import { repoRoot } from '../util/repo-root.js';
import { DeferredMessage } from './messages.js';
import { type MessageDescriptor, WireRules } from './wire-check.js';

export const PROTO_PACKAGE = 'blobstore.v1';
export const PROTO_FILES = ['blobstore/v1/blob.proto', 'blobstore/v1/cluster.proto', 'blobstore/v1/internal.proto'];

export const LOADER_OPTIONS: Options = {
  keepCase: true,
  longs: String,
  defaults: false,
  oneofs: false,
};

/** src/proto (the build does not copy .proto files: they are read from the source tree). */
export function protoDir(): string {
  return join(repoRoot(), 'src', 'proto');
}

let loaded: PackageDefinition | undefined;

/** The package definition of all three services, as proto-loader builds it (clients use this). */
export function loadProtos(): PackageDefinition {
  loaded ??= loadSync(PROTO_FILES, { ...LOADER_OPTIONS, includeDirs: [protoDir()] });
  return loaded;
}

/** A request that failed to decode; handlers answer it with INVALID_ARGUMENT. */
export class MalformedMessage {
  constructor(readonly problem: string) {}
}

export type ServiceName = 'BlobService' | 'ClusterService' | 'InternalService';

let rules: WireRules | undefined;

function wireRules(definition: PackageDefinition): WireRules {
  if (rules) return rules;
  rules = new WireRules();
  for (const [name, entry] of Object.entries(definition)) {
    if ('format' in entry && entry.format === 'Protocol Buffer 3 DescriptorProto') {
      rules.add(name, entry.type as MessageDescriptor);
    }
  }
  rules.link();
  return rules;
}

/** The message type name of a method's request, from proto-loader's descriptor (`PutChunk`). */
function requestTypeName(method: { requestType: { type: object } }): string {
  return `${PROTO_PACKAGE}.${(method.requestType.type as MessageDescriptor).name}`;
}

/** A service's definition for the server: hardened request decoding, pre-encoded responses. */
export function serverDefinition(service: ServiceName): ServiceDefinition {
  const definition = loadProtos();
  const checker = wireRules(definition);
  const methods = definition[`${PROTO_PACKAGE}.${service}`] as unknown as Record<string, Parameters<typeof requestTypeName>[0] & ServiceDefinition[string]>;
  const hardened: Record<string, ServiceDefinition[string]> = {};
  for (const [name, method] of Object.entries(methods)) {
    const typeName = requestTypeName(method);
    const decode = method.requestDeserialize;
    const encode = method.responseSerialize;
    hardened[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer): unknown => {
        const problem = checker.check(typeName, bytes);
        if (problem !== undefined) return new MalformedMessage(`malformed ${typeName}: ${problem}`);
        try {
          return decode(bytes);
        } catch (err) {
          return new MalformedMessage(`malformed ${typeName}: ${(err as Error).message}`);
        }
      },
      responseSerialize: (value: unknown): Buffer => (value instanceof DeferredMessage ? value.encode() : encode(value)),
    };
  }
  return hardened;
}
