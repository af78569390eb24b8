-- Dashboard reads with an API token, as a busy dashboard would make them: each
-- connection waits 50 ms between requests (about 20 per second per connection).
wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("API_TOKEN")
local paths = {}
for p in string.gmatch(os.getenv("QUERY_PATHS"), "[^,]+") do paths[#paths + 1] = p end
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format(nil, paths[i])
end

delay = function()
  return 50
end
