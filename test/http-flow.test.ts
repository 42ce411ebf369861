/**
 * Request bodies and uWS's idle timer: once a store's body is all in, nothing resumes the socket
 * (uWS re-arms its fixed 10 s idle timer on resume() and would close the connection of a store
 * that takes longer to answer, an EC store distributing its columns, without an answer).
 */
import { describe, expect, it } from 'vitest';
import { flowOf, newExchange, sendJson } from '../src/http/reply.js';
import { silentLogger } from '../src/log/logger.js';
import type { HttpResponse } from '../src/http/uws.js';
import { WIRE_B } from '../src/http/wire.js';

function fakeResponse(): { res: HttpResponse; calls: string[] } {
  const calls: string[] = [];
  const res = {
    pause: () => void calls.push('pause'),
    resume: () => void calls.push('resume'),
    cork: () => void calls.push('cork'),
    onAborted: () => res,
  } as unknown as HttpResponse;
  return { res, calls };
}

describe('body flow control', () => {
  it('pauses and resumes while the body arrives', () => {
    const { res, calls } = fakeResponse();
    const x = newExchange(res, WIRE_B, silentLogger());
    const flow = flowOf(x);
    flow.pause();
    flow.resume();
    expect(calls).toEqual(['pause', 'resume']);
  });

  it('once the body is in, a pause holds and a resume is never sent until the answer, which resumes it', () => {
    const { res, calls } = fakeResponse();
    const x = newExchange(res, WIRE_B, silentLogger());
    const flow = flowOf(x);
    x.bodyDone = true;
    flow.pause();
    flow.resume();
    expect(calls).toEqual(['pause']);
    sendJson(x, 201, '{}');
    expect(calls).toEqual(['pause', 'resume', 'cork']);
  });
});
