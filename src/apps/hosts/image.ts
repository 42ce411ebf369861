/**
 * What deploy/Containerfile's image provides, for the targets that run it (container,
 * Kubernetes): a test reads the Containerfile and checks that these still match it.
 */

/** The image's non-root user and group id. */
export const IMAGE_UID = 10001;
/** The image's data volume, BLOBSTORE_DATA_DIR inside the container. */
export const DATA_DIR = '/var/lib/blobstore';
/** Where the package is installed in the image (npm's global prefix). */
export const IMAGE_PREFIX = '/opt/blobstore';
