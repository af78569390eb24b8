-- A gzip batch of 100 app events per request with a fresh X-Batch-Id each time.
local f = assert(io.open(os.getenv("BATCH_FILE"), "rb"))
wrk.body = f:read("*all")
f:close()
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
  -- A visitor from a pool of 50,000: visits of several events, as on a real site.
  local v = math.random(1, 50000)
  wrk.headers["X-Forwarded-For"] = "10." .. (v % 200) .. "." .. (math.floor(v / 200) % 250) .. ".7"
  return wrk.format()
end
