/**
 * Erasure coding: systematic Reed-Solomon over GF(2^8) in our own C kernel (native/).
 * Synchronous calls run on the calling thread; the *Async forms run in a Piscina worker.
 */
export {
  EC_FORMAT_VERSION,
  encode,
  encodeUpdate,
  reconstruct,
  ecEncodingMatrix,
  ecKernelPath,
  ecKernelPaths,
  setEcKernelPath,
  ecCacheStats,
  ecLimits,
  type Shard,
  type ReconstructOptions,
  type EcKernelPathName,
  type CacheStats,
  type PathInfo,
} from './codec.js';
export { encodeAsync, reconstructAsync, closeEcPool, allocSharedStripe, ecWorkerFilename, type EcAsyncOptions } from './async.js';
export { EcError, EcErrorCode } from './errors.js';
