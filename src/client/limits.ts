/**
 * What one batch request carries at most: within the node's default maxBatchBlobs (1024) and
 * maxBatchBytes (16 MiB), so that a node with its defaults takes every batch the client makes.
 */
export const BATCH_MAX_BLOBS = 256;
export const BATCH_MAX_BYTES = 8 * 1024 * 1024;
