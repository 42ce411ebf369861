-- GET /v1/blobs/<id> over a list of ids (one per line), each thread from its own offset; with a
-- token, every request carries `Authorization: Bearer <token>`; with a request id, `X-Request-Id`.
-- usage: wrk ... -s get-ids.lua URL -- IDS_FILE [TOKEN] [REQUEST_ID]
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "summary.lua")

local threads = 0
local reqs = {}
local n, i = 0, 0

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  local headers = {}
  if args[2] and #args[2] > 0 then headers["Authorization"] = "Bearer " .. args[2] end
  if args[3] and #args[3] > 0 then headers["X-Request-Id"] = args[3] end
  for line in io.lines(args[1]) do
    if #line > 0 then
      n = n + 1
      reqs[n] = wrk.format("GET", "/v1/blobs/" .. line, headers)
    end
  end
  if n == 0 then error("no ids in " .. args[1]) end
  i = ((tid or 1) * 7919) % n
end

function request()
  i = i % n + 1
  return reqs[i]
end
