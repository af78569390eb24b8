-- A gzip batch of 100 app events per request with a fresh X-Batch-Id each time, from a
-- pool of devices: each device has its own address (so its own visitor) and its own
-- session id (its body, from BATCH_FILE at the offsets listed in BATCH_FILE.idx).
local f = assert(io.open(os.getenv("BATCH_FILE"), "rb"))
local data = f:read("*all")
f:close()
local bodies = {}
for line in io.lines(os.getenv("BATCH_FILE") .. ".idx") do
  local off, len = line:match("(%d+) (%d+)")
  bodies[#bodies + 1] = data:sub(tonumber(off) + 1, tonumber(off) + tonumber(len))
end
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Content-Encoding"] = "gzip"
wrk.headers["X-App-Key"] = os.getenv("APP_KEY")
math.randomseed(os.time() + 7)
local function hex(n)
  local s = ""
  for i = 1, n do s = s .. string.format("%x", math.random(0, 15)) end
  return s
end
request = function()
  wrk.headers["X-Batch-Id"] = hex(8) .. "-" .. hex(4) .. "-4" .. hex(3) .. "-a" .. hex(3) .. "-" .. hex(12)
  local v = math.random(1, #bodies)
  wrk.headers["X-Forwarded-For"] = "10." .. (v % 200) .. "." .. (math.floor(v / 200) % 250) .. ".7"
  return wrk.format(nil, nil, nil, bodies[v])
end

-- PACE_MS: each connection waits this long on average between requests (a load below
-- capacity, for latency not made of queueing); unset, requests follow each other at once.
-- The wait is drawn at random (0 to twice PACE_MS): a fixed one keeps the connections in
-- step, and their requests then arrive in bursts of 64 that queue behind each other.
local pace = tonumber(os.getenv("PACE_MS") or "0")
if pace > 0 then
  delay = function()
    return math.random(0, 2 * pace)
  end
end
