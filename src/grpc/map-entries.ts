/**
 * File descriptors for server reflection with map entries named as protoc names them.
 *
 * proto-loader builds each file's descriptor with protobufjs, which names a map field's entry
 * type after the field (`labels` -> `Labels`). protoc, and every descriptor pool that checks what
 * it is given (Python's, Go's protodesc behind grpcurl), requires `<CamelCaseField>Entry`
 * (`LabelsEntry`) and refuses the file otherwise ("map_entry should not be set explicitly",
 * "invalid map: incorrect implicit map entry name"). The entries are renamed here, with the
 * fields that point at them, before @grpc/reflection serves the files.
 */
import type { PackageDefinition } from '@grpc/proto-loader';
import descriptor from 'protobufjs/ext/descriptor/index.js';

interface Field {
  name?: string | null;
  typeName?: string | null;
}

interface Message {
  name?: string | null;
  field?: Field[] | null;
  nestedType?: Message[] | null;
  options?: { mapEntry?: boolean | null } | null;
}

interface FileMessage {
  messageType?: Message[] | null;
}

/** protoc's name for a map field's entry type: the field's name in CamelCase, then `Entry`. */
export function mapEntryName(field: string): string {
  return field.split('_').filter((part) => part !== '').map((part) => part[0]!.toUpperCase() + part.slice(1)).join('') + 'Entry';
}

function renameEntries(message: Message): void {
  for (const nested of message.nestedType ?? []) {
    renameEntries(nested);
    if (nested.options?.mapEntry !== true) continue;
    const field = (message.field ?? []).find((f) => f.typeName === nested.name || f.typeName?.endsWith(`.${nested.name}`));
    if (!field?.name || !nested.name) continue;
    const entry = mapEntryName(field.name);
    field.typeName = field.typeName!.slice(0, field.typeName!.length - nested.name.length) + entry;
    nested.name = entry;
  }
}

/** One serialized FileDescriptorProto with its map entries renamed. */
export function withMapEntryNames(file: Uint8Array): Buffer {
  const type = (descriptor as unknown as { FileDescriptorProto: { decode(b: Uint8Array): FileMessage; encode(m: FileMessage): { finish(): Uint8Array } } }).FileDescriptorProto;
  const decoded = type.decode(file);
  for (const message of decoded.messageType ?? []) renameEntries(message);
  return Buffer.from(type.encode(decoded).finish());
}

/** The package definition with every file descriptor's map entries renamed (each file once). */
export function reflectedPackage(pkg: PackageDefinition): PackageDefinition {
  const done = new Map<Buffer, Buffer>();
  const fixed = (file: Buffer): Buffer => {
    let out = done.get(file);
    if (out === undefined) done.set(file, (out = withMapEntryNames(file)));
    return out;
  };
  return Object.fromEntries(Object.entries(pkg).map(([name, definition]) => {
    const files = (definition as { fileDescriptorProtos?: Buffer[] }).fileDescriptorProtos;
    return [name, Array.isArray(files) ? { ...definition, fileDescriptorProtos: files.map(fixed) } : definition];
  })) as PackageDefinition;
}
