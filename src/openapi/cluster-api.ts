/**
 * The cluster endpoints (/v1/cluster/*) in the OpenAPI document of the API port: the spec's
 * ClusterService shapes, with blobstore's additions (grpc_address, region, the member state that
 * heartbeats merge) marked as such. Numbers follow the variant (int64 as strings in A).
 */
import { type Operation, type Schema, errorResponses, json, ref } from './schema.js';

type Int64 = (description: string) => Schema;

export function clusterSchemas(int64: Int64): Record<string, Schema> {
  const memberRecord: Schema = {
    type: 'object', description: 'blobstore addition: one node\'s record in the merged member state (the highest incarnation wins)',
    properties: {
      node_id: { type: 'string' }, incarnation: int64('grows with every change of the record'), status: { type: 'string', enum: ['active', 'leaving', 'removed'] },
      address: { type: 'string' }, grpc_address: { type: 'string' }, region: { type: 'string' }, capacity_bytes: int64('bytes'),
    },
  };
  return {
    NodeInfo: {
      type: 'object', required: ['node_id', 'address', 'state'],
      properties: {
        node_id: { type: 'string' }, address: { type: 'string', description: 'HTTP API host:port' },
        state: { type: 'string', enum: ['joining', 'active', 'leaving', 'offline'] },
        capacity_bytes: int64('storage the node contributes'), used_bytes: int64('current usage'), blob_count: int64('blobs stored on the node'),
        grpc_address: { type: 'string', description: 'blobstore addition: where peers reach its gRPC services' },
        region: { type: 'string', description: 'blobstore addition: its region label' },
      },
    },
    MemberRecord: memberRecord,
    JoinRequest: {
      type: 'object', required: ['node_id', 'address', 'capacity_bytes'],
      properties: { node_id: { type: 'string' }, address: { type: 'string' }, capacity_bytes: int64('bytes'), grpc_address: { type: 'string' }, region: { type: 'string' }, incarnation: int64('the highest the node knows of itself') },
    },
    JoinResponse: {
      type: 'object', required: ['accepted', 'ring_version', 'nodes'],
      properties: { accepted: { type: 'boolean' }, ring_version: int64('ring version'), nodes: { type: 'array', items: ref('NodeInfo') }, members: { type: 'array', items: ref('MemberRecord') } },
    },
    LeaveRequest: { type: 'object', required: ['node_id'], properties: { node_id: { type: 'string' }, graceful: { type: 'boolean', description: 'true: its data moves first (state leaving); false: removed at once' } } },
    LeaveResponse: { type: 'object', required: ['acknowledged'], properties: { acknowledged: { type: 'boolean' } } },
    HeartbeatRequest: {
      type: 'object', required: ['node_id', 'used_bytes', 'blob_count', 'ring_version'],
      properties: {
        node_id: { type: 'string' }, used_bytes: int64('bytes'), blob_count: int64('blobs'), ring_version: int64('the caller\'s ring version'),
        members: { type: 'array', items: ref('MemberRecord') }, digest: { type: 'string', description: 'digest of the caller\'s member state' },
      },
    },
    HeartbeatResponse: {
      type: 'object', required: ['ok', 'ring_version'],
      properties: {
        ok: { type: 'boolean' }, ring_version: int64('ring version'), nodes: { type: 'array', items: ref('NodeInfo'), description: 'filled when the caller is behind' },
        commands: { type: 'array', items: { type: 'string', enum: ['rejoin'] } }, members: { type: 'array', items: ref('MemberRecord') }, digest: { type: 'string' },
      },
    },
    ClusterState: {
      type: 'object', required: ['nodes', 'ring_version'],
      properties: { nodes: { type: 'array', items: ref('NodeInfo') }, ring_version: int64('ring version'), repair: ref('RepairView') },
    },
    RepairRequest: {
      type: 'object', required: ['bytes_per_second', 'seconds'],
      properties: {
        bytes_per_second: { type: 'integer', minimum: 0, description: 'the repair bandwidth cap to use (0: none)' },
        seconds: { type: 'integer', minimum: 1, description: 'how long, before the cap falls back to the setting repairBytesPerSecond' },
      },
    },
    RepairView: {
      type: 'object', description: 'blobstore addition: repair on the answering node (docs/erasure-coding.md)',
      properties: {
        queue_depth: { type: 'integer', description: 'blobs queued for repair: EC blobs to rebuild columns of, replicas a peer lacks' }, bytes_left: int64('bytes the queued repairs are estimated to rebuild'),
        bytes_per_second: { type: 'integer', description: 'rebuilt per second in the last pass' }, eta_seconds: { type: 'integer', description: 'estimated time to an empty queue' },
        rate_limit_bytes_per_second: { type: 'integer', description: 'the cap in force (0: none)' }, base_rate_bytes_per_second: { type: 'integer', description: 'the setting' },
        boosted_until_ms: { type: 'integer', description: 'when a cap set by POST /v1/cluster/repair ends (Unix ms; 0: none)' },
        columns_repaired: { type: 'integer', description: 'EC columns rebuilt since start' }, blobs_repaired: { type: 'integer', description: 'replicas copied to owners that lacked them, since start' },
        bytes_repaired: int64('of both, since start'),
        scrub: { type: 'object', properties: { active: { type: 'boolean' }, passes: { type: 'integer' }, bytes_checked: int64('in the current or last pass'), corrupt_found: { type: 'integer' } } },
      },
    },
    BootstrapProbe: {
      type: 'object', required: ['node_id'], description: 'blobstore addition: a node forming a cluster asks a seed (docs/cluster.md, Bootstrap)',
      properties: { node_id: { type: 'string' }, candidate: { type: 'string', description: 'the lowest node id the caller heard from its node' } },
    },
    BootstrapAnswer: {
      type: 'object', required: ['node_id', 'member'],
      properties: {
        node_id: { type: 'string' }, member: { type: 'boolean', description: 'the answering node is a member: join through it' },
        candidate: { type: 'string', description: 'the lowest node id the answering node heard from its node (while it is not a member)' },
      },
    },
    SyncRingRequest: { type: 'object', required: ['ring_version'], properties: { ring_version: int64('the caller\'s ring version') } },
    SyncRingResponse: {
      type: 'object', required: ['ring_version', 'node_ids', 'vnodes_per_node'],
      properties: { ring_version: int64('ring version'), node_ids: { type: 'array', items: { type: 'string' } }, vnodes_per_node: { type: 'integer' } },
    },
  };
}

const NOTE = 'Scope admin (with a token file); a node presents the cluster secret in X-Blobstore-Cluster-Secret instead.';

const post = (operationId: string, summary: string, request: string, response: string, errors: number[], extra: Record<number, object> = {}): Operation => ({
  operationId, tags: ['cluster'], summary, description: NOTE,
  requestBody: { required: true, content: json(ref(request)) },
  responses: { 200: { description: 'done', content: json(ref(response)) }, ...extra, ...errorResponses(errors) },
});

export function clusterPaths(): Record<string, Record<string, Operation>> {
  return {
    '/v1/cluster/join': { post: post('clusterJoin', 'Admit a node (or admit it again)', 'JoinRequest', 'JoinResponse', [400, 401, 403, 500, 503]) },
    '/v1/cluster/leave': { post: post('clusterLeave', 'Remove a node, gracefully (its data moves first) or at once', 'LeaveRequest', 'LeaveResponse', [400, 401, 403, 404, 500]) },
    '/v1/cluster/heartbeat': {
      post: post('clusterHeartbeat', 'A member reports itself and merges member state', 'HeartbeatRequest', 'HeartbeatResponse', [400, 401, 403, 500], {
        404: { description: 'unknown node: ok false and commands ["rejoin"] (a removed node: no command), beside the error fields', content: json(ref('HeartbeatResponse')) },
      }),
    },
    '/v1/cluster/sync-ring': { post: post('clusterSyncRing', 'The ring: version, node ids, vnodes per node', 'SyncRingRequest', 'SyncRingResponse', [400, 401, 403, 500]) },
    '/v1/cluster/bootstrap': {
      post: post('clusterBootstrap', 'blobstore addition: a node forming a cluster probes a seed (is it a member; the lowest node id it heard)', 'BootstrapProbe', 'BootstrapAnswer', [400, 401, 403, 501, 503]),
    },
    '/v1/cluster/repair': {
      post: post('clusterRepair', 'blobstore addition: set this node\'s repair bandwidth cap for a while (the repair priority knob)', 'RepairRequest', 'RepairView', [400, 401, 403, 501, 503]),
    },
    '/v1/cluster/state': {
      get: { operationId: 'clusterState', tags: ['cluster'], summary: 'Members and ring version as this node sees them', description: NOTE, responses: { 200: { description: 'state', content: json(ref('ClusterState')) }, ...errorResponses([401, 403, 501, 503]) } },
      head: { operationId: 'clusterStateHead', tags: ['cluster'], summary: 'As GET, without a body', description: NOTE, responses: { 200: { description: 'state' } } },
    },
  };
}
