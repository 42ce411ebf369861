-- Adds `Authorization: Bearer $BENCH_AUTH_TOKEN` to every request a script formats. Loaded by the
-- wrappers after their inner script. Cheap on purpose (wrk shares the cores with the node): the
-- header goes into wrk.headers once, and into a script's own (reused) headers table in place.
local token = os.getenv("BENCH_AUTH_TOKEN")
if token == nil or token == "" then error("BENCH_AUTH_TOKEN is not set") end
local value = "Bearer " .. token
wrk.headers["Authorization"] = value
local format = wrk.format
wrk.format = function(method, path, headers, body)
  if headers ~= nil then headers["Authorization"] = value end
  return format(method, path, headers, body)
end
