-- bench/node/lua/post-unique.lua with a bearer token (BENCH_AUTH_TOKEN); same arguments.
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "../../node/lua/post-unique.lua")
dofile(dir .. "with-auth.lua")
