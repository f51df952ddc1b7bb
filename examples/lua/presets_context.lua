-- Tell a running `presets serve` the host's context, from Lua (docs/hosts.md).
--
-- Needs Lua 5.4 with lua-cjson and lua-socket (Debian: lua5.4 lua-cjson lua-socket).
--
-- As a module, in a Lua host:
--
--   package.path = "examples/lua/?.lua;" .. package.path
--   local presets = require("presets_context")
--   local answer = presets.push(state_dir, {surface = "canvas", activity = "drawing"})
--   if not answer.ok then print(answer.error.message) end
--
-- `push` returns the server's answer as a table ({ok = true, result = {...}} or
-- {ok = false, error = {code, message, field, values}}); `via = "http"` in its
-- options sends it to the console's endpoint instead of the control socket. A
-- field cleared is presets.null (cjson's null), never nil: nil leaves it out.
--
-- As a script:
--
--   lua5.4 examples/lua/presets_context.lua [--http] STATE_DIR KEY=VALUE...
--
-- prints the context after the change, or the server's error and exits 1.
-- VALUE reads as `presets context set` reads it: true, false, null (or nothing) for
-- none, anything else a string.

local cjson = require("cjson")
local unix = require("socket.unix")

local M = {null = cjson.null}

local function no_server(state_dir, why)
  return {
    ok = false,
    error = {
      code = "no-server",
      message = ("no presets server answers for %s (%s)"):format(state_dir, why),
    },
  }
end

-- One JSON line each way on STATE/control.sock (docs/control.md).
local function over_socket(state_dir, message)
  local conn = unix.stream()
  conn:settimeout(10)
  local ok, err = conn:connect(state_dir .. "/control.sock")
  if not ok then
    conn:close()
    return no_server(state_dir, err)
  end
  conn:send(cjson.encode(message) .. "\n")
  local line, read_err = conn:receive("*l")
  conn:close()
  if not line then
    return no_server(state_dir, read_err)
  end
  return cjson.decode(line)
end

local function read_credential(state_dir)
  local file = io.open(state_dir .. "/host-credential.json", "r")
  if not file then
    return nil
  end
  local text = file:read("a")
  file:close()
  local ok, credential = pcall(cjson.decode, text)
  return ok and credential or nil
end

-- POST /api/context with the host credential (STATE/host-credential.json).
local function over_http(state_dir, message)
  local http = require("socket.http")
  local ltn12 = require("ltn12")
  -- Twice at most: a refused token may be an older server's, so read the file again.
  for _ = 1, 2 do
    local credential = read_credential(state_dir)
    if not credential then
      return no_server(state_dir, "no host-credential.json: is it running with --console?")
    end
    local body = cjson.encode(message)
    local chunks = {}
    local ok, status = http.request({
      url = credential.url,
      method = "POST",
      headers = {
        ["Authorization"] = "Bearer " .. credential.token,
        ["Content-Type"] = "application/json",
        ["Content-Length"] = tostring(#body),
      },
      source = ltn12.source.string(body),
      sink = ltn12.sink.table(chunks),
    })
    if not ok then
      return no_server(state_dir, status)
    end
    if status ~= 401 then
      return cjson.decode(table.concat(chunks))
    end
  end
  return no_server(state_dir, "it refused the host credential")
end

--- Set fields of the running server's context; returns the server's answer.
-- options.via: "socket" (default) or "http"; options.by: the name on the event line.
function M.push(state_dir, fields, options)
  options = options or {}
  local message = {op = "context", set = fields, by = options.by or "host"}
  if options.via == "http" then
    return over_http(state_dir, message)
  end
  return over_socket(state_dir, message)
end

local function value_of(text)
  if text == "true" then
    return true
  elseif text == "false" then
    return false
  elseif text == "null" or text == "" then
    return cjson.null
  end
  return text
end

local function shown(value)
  if value == cjson.null then
    return "null"
  end
  return tostring(value)
end

local function main(args)
  local via = "socket"
  local rest = {}
  for _, a in ipairs(args) do
    if a == "--http" then
      via = "http"
    else
      rest[#rest + 1] = a
    end
  end
  local state_dir = rest[1]
  if not state_dir or #rest < 2 then
    io.stderr:write("usage: presets_context.lua [--http] STATE_DIR KEY=VALUE...\n")
    os.exit(2)
  end
  local fields = {}
  for i = 2, #rest do
    local key, value = rest[i]:match("^([^=]+)=(.*)$")
    if not key then
      io.stderr:write(("'%s' is not KEY=VALUE\n"):format(rest[i]))
      os.exit(2)
    end
    fields[key] = value_of(value)
  end
  local answer = M.push(state_dir, fields, {via = via})
  if not answer.ok then
    io.stderr:write(answer.error.message .. "\n")
    os.exit(1)
  end
  local parts = {}
  for key, value in pairs(answer.result.context) do
    parts[#parts + 1] = key .. "=" .. shown(value)
  end
  table.sort(parts)
  print(("context: %s (changed: %s)"):format(
    table.concat(parts, " "), table.concat(answer.result.changed, ", ")))
end

-- Run as a script (not required as a module): the arguments follow the script's name.
if arg and arg[0] and arg[0]:match("presets_context%.lua$") and select("#", ...) == #arg then
  main(arg)
end

return M
