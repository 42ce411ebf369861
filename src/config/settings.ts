import { hostname } from 'node:os';
import { LOG_FORMATS, LOG_LEVELS } from '../log/logger.js';
import { defaultDataDir } from './paths.js';

/**
 * Every node setting, declared once: its type, default, unit, and the names that set it.
 * Precedence: defaults < config file (`node.<key>`) < BLOBSTORE_* env < command-line flags.
 * The spec's setting names (NodeID, MetricsAddr, HeartbeatInterval, SeedNodes) are accepted as
 * written there: as a flag (`--NodeID`), as an env variable (`NodeID`), and as a file key.
 */

export type SettingType = 'string' | 'int' | 'bytes' | 'durationMs' | 'bool' | 'list' | 'enum' | 'addr';

export interface SettingSpec {
  readonly type: SettingType;
  readonly default: () => unknown;
  readonly help: string;
  /** Spec spelling, accepted as flag, env variable and file key. */
  readonly specName?: string;
  /** The values an enum takes; its help names each of them (help shows no separate list). */
  readonly choices?: readonly string[];
  readonly min?: number;
  readonly max?: number;
  /** A size that must be a power of two. */
  readonly powerOfTwo?: boolean;
  /** Address settings that may be empty (disabled) or the word `same`. */
  readonly allowEmpty?: boolean;
  readonly allowSame?: boolean;
  /**
   * A tuning knob: left out of `serve --help` (docs/tuning.md lists it with what it trades). Its
   * flag, env variable and file key work as any setting's.
   */
  readonly tuning?: boolean;
}

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;

/** The log settings every long-running process has (the node and the orders service). */
export const LOG_SETTINGS = {
  logLevel: {
    type: 'enum', default: () => 'info', choices: LOG_LEVELS,
    help: 'lowest level logged: trace, debug, info, warn, error, fatal, or silent',
  },
  logFormat: {
    type: 'enum', default: () => 'auto', choices: LOG_FORMATS,
    help: 'log lines: json (one JSON object a line), pretty (for people), auto (pretty on a terminal, else json)',
  },
} as const satisfies Record<string, SettingSpec>;

export const SETTINGS = {
  dataDir: { type: 'string', default: defaultDataDir, help: 'data directory (blobs, segments, index)' },
  listen: { type: 'addr', default: () => '127.0.0.1:8080', help: 'HTTP API address host:port' },
  nodeId: {
    type: 'string', default: () => hostname(), specName: 'NodeID',
    help: 'unique node ID; unless set: the one the data dir recorded, else the hostname (with -<port> when --listen is not port 8080, so nodes sharing a host differ)',
  },
  metricsAddr: {
    type: 'addr', default: () => ':9090', specName: 'MetricsAddr', allowEmpty: true, allowSame: true,
    help: 'metrics, health and web UI listener; "same" = the API port, "" = off',
  },
  healthCheckTimeoutMs: {
    type: 'durationMs', default: () => 2000, min: 10,
    help: '/health: a storage backend check (statfs and a small write + fsync in the data dir) slower than this fails',
  },
  grpcAddr: {
    type: 'addr', default: () => '127.0.0.1:50051', specName: 'GrpcAddr', allowEmpty: true,
    help: 'gRPC listener (BlobService, ClusterService, InternalService) host:port; unless set: the --listen host, port 50051; "" = off',
  },
  grpcMaxMessageBytes: {
    tuning: true,
    type: 'bytes', default: () => 65 * MiB, min: 64 * KiB,
    help: 'largest gRPC message received or sent (a unary put carries the whole blob)',
  },
  grpcWindowBytes: {
    tuning: true,
    type: 'bytes', default: () => 8 * MiB, min: 64 * KiB, max: 2 * GiB - 1,
    help: 'HTTP/2 flow-control window the gRPC server announces, per stream and per connection',
  },
  grpcIdleTimeoutMs: {
    type: 'durationMs', default: () => 60_000, min: 100,
    help: 'a gRPC connection with no call open for this long is closed (the client reconnects on its next call); so is one whose TLS handshake has not finished by then',
  },
  grpcMaxConnectionsPerAddress: {
    type: 'int', default: () => 256, min: 1,
    help: 'gRPC connections one remote address may hold open at once; more are closed as they arrive',
  },
  grpcHeapGrowingPercent: {
    tuning: true,
    type: 'int', default: () => 400, min: 0, max: 1000,
    help: "V8's heap growing factor (1 + this/100) while gRPC listens: room for node:http2's read buffers between full GCs; 0 = V8's own",
  },
  authTokensFile: {
    type: 'string', default: () => '', specName: 'AuthTokensFile',
    help: 'bearer token file (scopes read, write, admin); empty = authentication off; re-read on SIGHUP',
  },
  heartbeatIntervalMs: { type: 'durationMs', default: () => 5000, specName: 'HeartbeatInterval', min: 10, help: 'cluster heartbeat interval' },
  seedNodes: {
    type: 'list', default: () => [], specName: 'SeedNodes',
    help: 'HTTP API addresses or DNS names (host:port, comma separated) of the other nodes, this one among them or not, in any order; nodes started together form one cluster (the lowest node id founds it); empty: this node forms a cluster others join',
  },
  bootstrapWaitMs: {
    type: 'durationMs', default: () => 30_000, min: 0,
    help: 'a node forming a cluster waits this long for every seed to answer; then a majority of them may form it without the silent ones',
  },
  region: { type: 'string', default: () => '', help: 'region label of this node (copies go to distinct regions first)' },
  advertiseAddr: {
    type: 'string', default: () => '',
    help: 'the API address (host:port) peers and clients are told; empty: the bound --listen address (a wildcard host is replaced by this host\'s first non-loopback IPv4)',
  },
  clusterSecret: {
    type: 'string', default: () => '', specName: 'ClusterSecret',
    help: 'shared secret of the cluster\'s nodes: every node-to-node call carries it, and calls without it are refused. Required (or ClusterSecretFile) when a node with SeedNodes has AuthTokensFile or listens beyond loopback; a node without seeds then makes one in <data-dir>/cluster-secret',
  },
  clusterSecretFile: {
    type: 'string', default: () => '', specName: 'ClusterSecretFile',
    help: 'a file holding the cluster secret (its first line), instead of ClusterSecret: e.g. a copy of the founding node\'s <data-dir>/cluster-secret',
  },
  tlsCert: {
    type: 'string', default: () => '', specName: 'TLSCertFile',
    help: 'PEM certificate (chain) of this node: with --tls-key, every listener (API, metrics/UI, gRPC) speaks TLS only, and calls to peers go over TLS; re-read on SIGHUP',
  },
  tlsKey: { type: 'string', default: () => '', specName: 'TLSKeyFile', help: 'PEM private key of --tls-cert' },
  tlsCa: {
    type: 'string', default: () => '', specName: 'TLSCAFile',
    help: 'PEM CA bundle: peers\' certificates are verified against it (else against the system\'s CAs), and node-to-node calls present this node\'s certificate (mutual TLS)',
  },
  offlineAfterMs: { type: 'durationMs', default: () => 15_000, min: 10, help: 'a peer not heard from for this long is offline (the spec: 15 s)' },
  vnodesPerNode: { tuning: true, type: 'int', default: () => 128, min: 1, max: 4096, help: 'virtual nodes per member on the consistent-hash ring' },
  peerCallTimeoutMs: { tuning: true, type: 'durationMs', default: () => 5000, min: 10, help: 'deadline of a call to a peer (heartbeat, stat, a replication batch); a read asks a peer seen offline with a fifth of it; an EC store fails a column whose holder takes nothing and answers nothing for this long while the other columns wait (at most m, and at most ecStoreTimeoutMs; keep it under 10 s, the quiet a holder lets a column body have)' },
  peerReadConnections: {
    tuning: true,
    type: 'int', default: () => 16, min: 1, max: 1024,
    help: 'connections kept open to each peer for reads of blobs this node lacks (each holds a 1 MiB buffer); more reads wait for one',
  },
  replicationAcks: {
    type: 'int', default: () => 0, min: 0, max: 2,
    help: 'owners besides this node that must hold a new blob before the store is answered; 0: best effort, as the spec says',
  },
  replicationAckTimeoutMs: { type: 'durationMs', default: () => 10_000, min: 10, help: 'with replicationAcks > 0: a store not confirmed this long answers 503' },
  replicationBatchBytes: { tuning: true, type: 'bytes', default: () => 4 * MiB, min: 64 * KiB, help: 'bytes of small blobs sent to a peer in one call' },
  replicationBatchDelayMs: {
    tuning: true,
    type: 'durationMs', default: () => 25, min: 0, max: 10_000,
    help: 'stores gather this long before copies go out (unless one waits for its copies): fewer, larger batches, fewer syncs on the owners',
  },
  replicationMemoryBytes: {
    tuning: true,
    type: 'bytes', default: () => 16 * MiB, min: 0,
    help: 'bytes of just-stored small blobs kept in memory for their copies (beyond, copies read them back from disk)',
  },
  replicationStreamChunks: {
    tuning: true,
    type: 'int', default: () => 8, min: 1, max: 64,
    help: 'chunks (1 MiB) of a large blob being copied that are encoded and in flight at once, for all its peers together',
  },
  replicationRetryMaxMs: { tuning: true, type: 'durationMs', default: () => 30_000, min: 10, help: 'longest back-off between attempts to copy a blob to an owner' },
  repairIntervalMs: { type: 'durationMs', default: () => 60_000, min: 10, help: 'how often anti-entropy compares id digests with every owner' },
  repairRescanMs: {
    tuning: true, type: 'durationMs', default: () => 6 * 3_600_000, min: 10,
    help: 'how often anti-entropy\'s digest trees and handoff\'s count of copies not owned are made afresh from a scan of the whole index (between scans every store and delete updates them; a ring change rescans at once)',
  },
  repairBytesPerSecond: { type: 'bytes', default: () => 256 * MiB, min: 0, help: 'bandwidth cap of the copies each node makes for repair and handoff (per second; POST /v1/cluster/repair changes it for a while); 0: none' },
  handoffIntervalMs: { tuning: true, type: 'durationMs', default: () => 30_000, min: 10, help: 'how often copies this node holds but does not own are handed to their owners' },
  deleteRetentionMs: {
    type: 'durationMs', default: () => 30 * 24 * 3_600_000, min: 0,
    help: 'how long a local delete keeps copies of the blob made before it (replication, repair, handoff) from coming back to this node',
  },
  unheldDeleteMarks: {
    type: 'int', default: () => 100_000, min: 0,
    help: 'deletes of blobs this node holds nothing of (yet) remembered (in the index, across restarts), so that a copy made before the delete and arriving after it is declined; the oldest beyond this many go first; 0: none',
  },
  ecShardBytes: {
    type: 'bytes', default: () => 1 * MiB, min: 1, max: 256 * MiB,
    help: 'erasure coding: shard size of blobs up to ecLargeBlobBytes (the spec: 1 MiB); a blob is cut into stripes of k shards',
  },
  ecLargeShardBytes: { type: 'bytes', default: () => 16 * MiB, min: 1, max: 256 * MiB, help: 'erasure coding: shard size of blobs larger than ecLargeBlobBytes (the spec: 16 MiB)' },
  ecLargeBlobBytes: { type: 'bytes', default: () => 64 * MiB, min: 0, help: 'erasure coding: blobs larger than this use ecLargeShardBytes (the spec: 64 MiB)' },
  ecStreamMinBytes: {
    tuning: true,
    type: 'bytes', default: () => 16 * MiB, min: 0,
    help: 'erasure coding: a store of at least this many bytes whose length is known sends its columns as its bytes arrive (placed by a key, found through a manifest); smaller ones are received whole first; above maxBlobBytes: never',
  },
  ecColumnIdleTimeoutMs: {
    tuning: true,
    type: 'durationMs', default: () => 120_000, min: 10,
    help: 'erasure coding: how long a column streaming in as its blob arrives may get nothing before its holder drops it (its bytes come a stripe\'s shard at a time, and only as fast as the client sends)',
  },
  ecStoreTimeoutMs: {
    tuning: true,
    type: 'durationMs', default: () => 30_000, min: 10,
    help: 'erasure coding: a shard store to a node that sends nothing back for this long counts as failed (up to m failures are tolerated and repaired); one that holds the store\'s other columns back fails after peerCallTimeoutMs',
  },
  ecSurveyAfterMissMs: {
    tuning: true,
    type: 'durationMs', default: () => 60_000, min: 0,
    help: 'erasure coding: a read fetches the columns from where the ring places them without asking any node; for this long after a read found one out of place (a ring change, a repair onto another node), reads ask every candidate which columns it holds first',
  },
  ecFetchTimeoutMs: {
    tuning: true,
    type: 'durationMs', default: () => 2_000, min: 10,
    help: 'erasure coding: a shard read slower than this is replaced by a reconstruction from the other shards',
  },
  ecReadAheadCells: { tuning: true, type: 'int', default: () => 8, min: 1, max: 256, help: 'erasure coding: 1 MiB pieces of shards a read fetches ahead of what it sends' },
  scrubBytesPerSecond: {
    type: 'bytes', default: () => 8 * MiB, min: 0,
    help: 'the scrubber re-reads and verifies local blobs and shards at most this fast; 0: no scrubbing',
  },
  scrubIntervalMs: { type: 'durationMs', default: () => 24 * 3_600_000, min: 10, help: 'a scrub pass over every local blob and shard starts this long after the previous one began' },
  apiVariant: {
    type: 'enum', default: () => 'b', choices: ['a', 'b'], specName: 'ApiVariant',
    help: 'HTTP API variant: b (hex ids, numeric policies, 201 on create, raw bytes) or a (gRPC-gateway JSON)',
  },

  smallBlobMaxBytes: {
    tuning: true,
    type: 'bytes', default: () => 1 * MiB, min: 0, max: 16 * MiB,
    help: 'blobs up to this size go to segment files (group commit); larger ones stream to their own files',
  },
  segmentSizeBytes: { tuning: true, type: 'bytes', default: () => 256 * MiB, min: 1 * MiB, max: 4 * GiB, help: 'segment file size' },
  segmentAllocBytes: {
    tuning: true,
    type: 'bytes', default: () => 4 * MiB, min: 64 * KiB, max: 1 * GiB,
    help: 'segment space is allocated (fallocate) this much at a time ahead of the log, so a full disk refuses a store instead of tearing it',
  },
  diskReserveBytes: {
    type: 'bytes', default: () => 256 * MiB, min: 0,
    help: 'disk space stores may not use (at most 5% of the file system): deletes, index commits, compaction and restarts still work on a full disk',
  },
  groupCommitMaxBytes: { tuning: true, type: 'bytes', default: () => 8 * MiB, min: 64 * KiB, help: 'bytes appended per group commit, at most' },
  durableAck: {
    type: 'enum', default: () => 'log', choices: ['index', 'log'],
    help: 'log: acknowledge a store (delete) once its segment record is fsynced, its index record served from memory until its index commit (recovery replays the log past the last flushed checkpoint, docs/adr/0003-durability.md); index: once its index commit is flushed',
  },
  logPipelineDepth: { tuning: true, type: 'int', default: () => 4, min: 1, max: 64, help: 'group-commit batches of the log written and fsynced at once' },
  indexLagBatches: {
    tuning: true,
    type: 'int', default: () => 128, min: 1, max: 1024,
    help: 'log batches fsynced (acknowledged with durable-ack log) or in flight whose index commit is pending, at most; further stores wait (room for index commits that wait while a journal merge holds the write lock)',
  },
  indexCommitIntervalMs: {
    tuning: true,
    type: 'int', default: () => 20, min: 0, max: 10_000,
    help: 'with durable-ack log, index commits start at most this often (each is an LMDB transaction that writes back the pages it touched and the free-page list): under load each takes more batches, whose records are served from memory meanwhile; 0: one as soon as the previous is done',
  },
  indexCommitHoldMs: {
    tuning: true,
    type: 'durationMs', default: () => 50, min: 0, max: 1_000,
    help: 'with durable-ack log in a cluster, an index commit waits at most this long for the copies of its records to be sent: a replication-queue entry confirmed first is never written to the index nor removed from it; 0: commits never wait',
  },
  indexMergeRecords: {
    tuning: true,
    type: 'int', default: () => 262_144, min: 1, max: 4_194_304,
    help: 'blob record changes the index journal holds (in memory, and in LMDB by commit) before they are merged into the id-ordered index in one pass: more makes each merged page take more records, and start-up read more',
  },
  indexPageBytes: {
    tuning: true,
    type: 'bytes', default: () => 16 * KiB, min: 4 * KiB, max: 64 * KiB, powerOfTwo: true,
    help: 'page size of an index created by this node (a power of two; an existing index keeps its own): larger pages keep the list of free pages every index commit writes back short as the index grows, at the cost of more bytes written per commit',
  },
  readCacheBytes: {
    type: 'bytes', default: () => 64 * MiB, min: 0, max: 64 * GiB,
    help: 'memory for small blobs already read and verified, answered again without a disk read or re-hash (the scrubber re-verifies what is on disk); 0: off',
  },
  readCacheRecordMaxBytes: {
    tuning: true,
    type: 'bytes', default: () => 64 * KiB, min: 0, max: 256 * KiB,
    help: 'small blobs up to this size are kept in the read cache (readCacheBytes)',
  },
  compactionLiveRatio: { tuning: true, type: 'int', default: () => 50, min: 1, max: 99, help: 'compact a sealed segment whose live bytes fall under this percentage' },
  compactionIntervalMs: { tuning: true, type: 'durationMs', default: () => 10_000, min: 10, help: 'how often compaction looks for work' },

  maxBlobBytes: { type: 'bytes', default: () => 5 * GiB, min: 1, help: 'largest raw or streamed blob (413 above)' },
  maxJsonBodyBytes: { type: 'bytes', default: () => 64 * MiB, min: 1, help: 'largest JSON (base64) store body (413 above)' },
  maxBatchBytes: { type: 'bytes', default: () => 16 * MiB, min: 1, max: 1 * GiB, help: 'largest batch store body (POST /v1/blobs/batch; 413 above)' },
  maxBatchBlobs: { type: 'int', default: () => 1024, min: 1, max: 1_000_000, help: 'blobs in one batch store, at most (400 above)' },
  maxLabels: { type: 'int', default: () => 64, min: 0, max: 10_000, help: 'labels per blob' },
  labelKeyMaxBytes: { type: 'int', default: () => 128, min: 1, help: 'label key length (bytes)' },
  labelValueMaxBytes: { type: 'int', default: () => 1024, min: 0, help: 'label value length (UTF-8 bytes)' },
  listDefaultLimit: { type: 'int', default: () => 100, min: 1, help: 'list page size when limit is omitted or <= 0' },
  listMaxLimit: { type: 'int', default: () => 10_000, min: 1, help: 'list page sizes above this are clamped' },
  maxConcurrentUploads: { type: 'int', default: () => 1024, min: 1, help: 'stores in flight; more get 503 + Retry-After' },
  bodyIdleTimeoutMs: { type: 'durationMs', default: () => 30_000, min: 100, help: 'a request body that sends nothing for this long is aborted' },
  shutdownTimeoutMs: { type: 'durationMs', default: () => 10_000, min: 0, help: 'how long shutdown waits for in-flight requests' },
  chunkPoolBytes: {
    tuning: true,
    type: 'bytes', default: () => 512 * MiB, min: 8 * MiB,
    help: 'memory for the 1 MiB chunk buffers of large uploads and downloads; when it runs out, uploads pause',
  },
  chunkDigests: {
    tuning: true,
    type: 'enum', default: () => 'inline', choices: ['inline', 'pool'],
    help: 'where the BLAKE3 of large blobs\' 1 MiB chunks is computed (each chunk\'s chaining value, which checks it and makes the id): inline (on the main thread) or pool (in the worker pool)',
  },
  blobFileWrites: {
    tuning: true,
    type: 'enum', default: () => 'buffered', choices: ['buffered', 'direct'],
    help: 'how the whole 1 MiB chunks of large blobs reach their files: buffered (through the page cache) or direct (O_DIRECT, past it, where the file system allows; docs/adr/0012-hot-path.md has both measured)',
  },
  columnFileWrites: {
    tuning: true,
    type: 'enum', default: () => 'direct', choices: ['direct', 'buffered'],
    help: 'how the whole 1 MiB chunks of erasure-coded columns reach their files: direct (O_DIRECT, past the page cache, where the file system allows: a column is written once and read through its reader\'s checks, and the first read after a store comes from the disk) or buffered; docs/adr/0026-columns-past-the-page-cache.md has both measured',
  },
  columnFileReads: {
    tuning: true,
    type: 'enum', default: () => 'buffered', choices: ['buffered', 'direct'],
    help: 'how erasure-coded columns are read from their files: buffered (through the page cache: a column read again comes from memory) or direct (O_DIRECT, past it, where the file system allows: a column is read from the disk each time, without filling the cache or copying out of it); docs/adr/0027-column-reads.md has both measured',
  },
  logWrites: {
    tuning: true,
    type: 'enum', default: () => 'direct', choices: ['direct', 'buffered'],
    help: 'how group-commit batches reach the segment log: direct (O_DIRECT, past the page cache, write and fdatasync in one thread-pool job, where the file system allows) or buffered (written through the page cache on the event loop, fdatasync in the pool); docs/adr/0012-hot-path.md has both measured',
  },
  logReadBackBytes: {
    tuning: true,
    type: 'bytes', default: () => MiB, min: 0, max: 64 * MiB,
    help: 'with --log-writes direct, synced batches are read back into the page cache (by the device) once this many bytes of them have gathered, or once no batch is in flight, so blobs read soon after their store are in memory: each read-back is a device request (and a VM exit); 0: none',
  },
  logSpace: {
    tuning: true,
    type: 'enum', default: () => 'zeroed', choices: ['zeroed', 'allocated'],
    help: 'how segment space is readied ahead of the log: zeroed (allocated, then written with zeros past the page cache, with --log-writes direct: a batch then overwrites written blocks and its fdatasync commits no extent change; the log\'s blocks are written twice) or allocated (fallocate alone); docs/adr/0012-hot-path.md has both measured',
  },
  poolThreads: { type: 'int', default: () => 2, min: 1, max: 64, help: 'worker threads (hashing, erasure coding)' },
  poolQueueMax: {
    tuning: true,
    type: 'int', default: () => 256, min: 1, max: 65_536,
    help: 'worker pool tasks that may wait for a thread; beyond, a chunk digest runs inline and an erasure-coding task is refused',
  },

  // Bounds of the data path: how much of one request is in flight at once.
  chunkWritesInFlight: {
    tuning: true,
    type: 'int', default: () => 8, min: 1, max: 256,
    help: 'chunk writes (1 MiB) of one large blob, replica or shard column under way at once; beyond, its sender is paused',
  },
  readAheadChunks: { tuning: true, type: 'int', default: () => 4, min: 1, max: 256, help: 'chunks (1 MiB) a read of a large blob reads and verifies ahead of what it sends' },
  syncReadMaxBytes: {
    tuning: true,
    type: 'bytes', default: () => 256 * KiB, min: 4 * KiB, max: 16 * MiB,
    help: 'segment reads up to this size run on the calling thread (a thread-pool round trip costs more than the read)',
  },
  readMapSegments: {
    tuning: true,
    type: 'int', default: () => 4096, min: 0, max: 32_768,
    help: 'segment files mapped into memory for reads on the calling thread: a record whose pages the page cache is known to hold is copied from the mapping without a system call (each mapping is one of the kernel\'s vm.max_map_count areas); 0: every such read is a pread',
  },
  readMapCheckMs: {
    tuning: true,
    type: 'durationMs', default: () => 1000, min: 10, max: 60_000,
    help: 'how often the kernel\'s counters are read for pages it gave back (reclaim, a cache drop, a refault), after which no page counts as in memory until a read finds it there again',
  },
  compactionWindowBytes: {
    tuning: true,
    type: 'bytes', default: () => 8 * MiB, min: 64 * KiB, max: 1 * GiB,
    help: 'bytes compaction relocates between two log syncs; a segment is compacted only with this much free above its live bytes',
  },
  ecRowsInFlight: {
    tuning: true,
    type: 'int', default: () => 4, min: 1, max: 64,
    help: 'erasure coding: stripe rows (k + m cells of 1 MiB) of one store encoded and in flight at once',
  },
  ecColumnQueueBytes: {
    tuning: true,
    type: 'bytes', default: () => 8 * MiB, min: 1 * MiB, max: 1 * GiB,
    help: 'erasure coding: bytes of one shard column a read queues ahead of what it uses, at most; beyond, the fetch pauses',
  },
  ecColumnQueueStartBytes: {
    tuning: true,
    type: 'bytes', default: () => 2 * MiB, min: 1 * MiB, max: 1 * GiB,
    help: 'erasure coding: bytes of one shard column a read queues before it takes any (the window grows by what it takes, up to ecColumnQueueBytes): the first bytes go once every column gave its first cell (docs/adr/0018-ec-read-rows.md)',
  },
  accessLogEvery: {
    type: 'int', default: () => 0, min: 0, max: 1_000_000,
    help: 'access log at log level info: one line for one request in this many (HTTP and gRPC), 1 = every request, 0 = none (off by default: a busy node answers 30k+ requests a second); at debug every request is logged whatever this says',
  },
  ...LOG_SETTINGS,
} as const satisfies Record<string, SettingSpec>;

export type SettingKey = keyof typeof SETTINGS;

type ValueOf<S extends SettingSpec> = S['type'] extends 'list'
  ? string[]
  : S['type'] extends 'bool'
    ? boolean
    : S['type'] extends 'int' | 'bytes' | 'durationMs'
      ? number
      : string;

/** The validated node configuration. */
export type NodeConfig = { -readonly [K in SettingKey]: ValueOf<(typeof SETTINGS)[K]> };

/** `nodeId` -> `NODE_ID`, the env form after the `BLOBSTORE_` prefix. */
export function envName(key: string): string {
  return 'BLOBSTORE_' + key.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase();
}

/** `nodeId` -> `node-id`, the flag form. */
export function flagName(key: string): string {
  return key.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase();
}

/**
 * Bytes of a record's header and shard info, and of the JSON around labels, counted by
 * largestRecordBytes. The largest shard info (engine/shard-info.ts) is 384 bytes: 48 fixed, a
 * 16-byte placement key and the 10 column checksums of an EC82 blob.
 */
const RECORD_OVERHEAD_BYTES = 104 + 384 + 1024;

/**
 * The largest segment record a node writes or accepts: a small blob (or shard column) with its
 * labels at their limits. Segment sizing, recovery's scan buffer and torn span derive from it.
 */
export function largestRecordBytes(config: Pick<NodeConfig, 'smallBlobMaxBytes' | 'maxLabels' | 'labelKeyMaxBytes' | 'labelValueMaxBytes'>): number {
  // Each label costs its key and value plus quotes, a colon and a comma in the JSON.
  return config.smallBlobMaxBytes + config.maxLabels * (config.labelKeyMaxBytes + config.labelValueMaxBytes + 8) + RECORD_OVERHEAD_BYTES;
}
