-- GET of the URL's path on every request (echo ceiling).
-- usage: wrk ... -s get-static.lua http://127.0.0.1:PORT/4k
local dir = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(dir .. "summary.lua")
