/**
 * Room in V8's old generation for node:http2's read buffers. Every socket read of an HTTP/2
 * session is a new ArrayBuffer (64 KiB); a PutStream takes ~16k of them per GiB. V8 counts the
 * external memory allocated since the last full GC against the old generation's headroom until
 * a scavenge frees the dead buffers, and after a full GC it sets the limit at ~1.1x a heap that is
 * mostly long-lived (15 MB here): the headroom left over the new space is a few MiB, so a 1 GiB
 * PutStream ran ~30 full GCs (concurrent marking ~0.6 s of CPU per GiB, ~0.3 s of it on the
 * main thread) where the HTTP path, whose reads reuse one buffer, runs none. A larger growing
 * factor keeps the limit above that churn (2 full GCs in 3 GiB with 400%); the old generation
 * may then grow to (1 + percent/100) times its live size before it is collected.
 *
 * V8 reads the flag whenever it sets a new limit, so setting it at run time takes effect from
 * the next full GC on (setting grpcHeapGrowingPercent; 0 leaves V8's own factor).
 */
import v8 from 'node:v8';

export function growHeapForHttp2(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
