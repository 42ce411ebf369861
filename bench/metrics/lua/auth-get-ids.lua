-- bench/node/lua/get-ids.lua with a bearer token (BENCH_AUTH_TOKEN); same arguments.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "../../node/lua/get-ids.lua")
dofile(dir .. "with-auth.lua")
