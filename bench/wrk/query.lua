-- Dashboard reads with an API token, as a script or the dashboard would make them.
wrk.method = "GET"
wrk.headers["Authorization"] = "Bearer " .. os.getenv("API_TOKEN")
local paths = {}
for p in string.gmatch(os.getenv("QUERY_PATHS"), "[^,]+") do paths[#paths + 1] = p end
local i = 0
request = function()
  i = i % #paths + 1
  return wrk.format(nil, paths[i])
end
