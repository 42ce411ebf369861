-- GET /orders/{id} over ids 1..ORDERS_BENCH_IDS (existing orders), in a fixed stride.
local ids = tonumber(os.getenv("ORDERS_BENCH_IDS") or "1000")
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", "/orders/" .. ((n * 7919) % ids + 1))
end

function done(summary, latency, requests)
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"non2xx":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
