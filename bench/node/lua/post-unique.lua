-- POST of a body of SIZE bytes that differs on every request: the store is content-addressed,
-- so a repeated body would answer 200 without writing anything.
-- usage: wrk ... -s post-unique.lua URL -- SIZE NONCE [PATH] [POLICY]
--   body = 40-byte head "NONCE:THREAD:COUNTER" (space padded) .. filler up to SIZE
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "summary.lua")

local counter = 0
local threads = 0
local size, nonce, path, filler
local headers = { ["Content-Type"] = "application/octet-stream" }

function setup(thread)
  threads = threads + 1
  thread:set("tid", threads)
end

function init(args)
  size = tonumber(args[1]) or 4096
  nonce = args[2] or tostring(os.time())
  path = args[3] or "/v1/blobs"
  if args[4] then headers["X-Blobstore-Policy"] = args[4] end
  if size < 40 then error("SIZE must be at least 40") end
  filler = string.rep("b", size - 40)
end

function request()
  counter = counter + 1
  local head = string.format("%-40s", nonce .. ":" .. tostring(tid) .. ":" .. counter)
  return wrk.format("POST", path, headers, head .. filler)
end
