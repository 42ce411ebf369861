-- POST /orders with a valid body; every request creates one durable order.
wrk.method = "POST"
wrk.body = '{"amount": 1250, "currency": "EUR", "note": "bench"}'
wrk.headers["Content-Type"] = "application/json"

function done(summary, latency, requests)
  io.write(string.format('WRKJSON {"requests":%d,"duration_us":%d,"non2xx":%d,"errors":%d,"p50_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    latency:percentile(50), latency:percentile(99)))
end
