/** The package's library entry: `import { BlobClient } from 'blobstore'`. */
export { BlobClient, type BlobClientOptions, type BlobStat, type Body, type PutOptions, type PutResult } from './blob-client.js';
export { BlobClientError, BlobIdMismatch, type ClientErrorKind } from './errors.js';
