-- Neovim (0.7 or later, headless) as the editor of sansrpc-lsp's `todo_server` example.
--
--   TODO_SERVER=target/debug/examples/todo_server \
--     nvim --headless --clean -c "luafile interop/neovim/todo_server.lua"
--
-- Environment: TODO_SERVER, the server's path (required); TODO_ENCODING, a position
-- encoding to offer first and to speak (utf-8, utf-16 or utf-32; unset: what Neovim does
-- by itself, which is UTF-16 in 0.7); TODO_DEBOUNCE, Neovim's didChange debounce in
-- milliseconds (unset: its default, 150; 0 sends every edit at once as its own didChange);
-- TODO_DIR, a folder for the buffer's file name (not written).
--
-- It starts the server with vim.lsp.start_client, attaches a buffer with CRLF line endings
-- (fileformat=dos) and non-ASCII text, makes 20 quick incremental edits with
-- nvim_buf_set_text (non-BMP characters, CJK, a line split, a line join across a CRLF, a
-- TODO typed a letter at a time), asks for a hover right after the last edit and checks it
-- answers `version V: LINE` for the final version and text, checks the TODO diagnostics
-- Neovim keeps (vim.diagnostic.get, converted by Neovim from the negotiated encoding to
-- bytes) against the TODOs of the final text, checks `null` past the last line, stops the
-- client and checks the server exited with status 0, and checks Neovim's LSP log (at debug
-- level) has no WARN or ERROR line. It prints one line starting `ok:` and exits 0; on the
-- first failure it prints `FAILED: ...` on stderr and exits 1.

local WAIT = 10000 -- ms: the bound of every wait

local function fail(message)
  error({ failed = message }, 0)
end

local function check(cond, message, ...)
  if not cond then
    fail(string.format(message, ...))
  end
end

local function wait_for(what, predicate)
  check(vim.wait(WAIT, predicate, 5), "timed out after %d ms waiting for %s", WAIT, what)
end

-- An environment variable, nil when unset or empty.
local function env(name)
  local value = os.getenv(name)
  if value == "" then
    return nil
  end
  return value
end

local function main()
  local server = env("TODO_SERVER")
  check(server, "set TODO_SERVER to the todo_server example's path")
  local encoding = env("TODO_ENCODING")
  local debounce = tonumber(env("TODO_DEBOUNCE") or "")
  local dir = env("TODO_DIR") or vim.fn.tempname()

  vim.lsp.set_log_level("debug")
  local log_path = vim.lsp.get_log_path()
  local log_start = (vim.loop.fs_stat(log_path) or { size = 0 }).size

  -- The buffer, before the server starts: CRLF line endings and non-ASCII text.
  local buf = vim.api.nvim_create_buf(true, false)
  vim.api.nvim_buf_set_name(buf, dir .. "/notes.txt")
  vim.bo[buf].fileformat = "dos"
  vim.api.nvim_buf_set_lines(buf, 0, -1, true, { "# notes 😀", "日本語 line", "end 𝄞" })
  vim.api.nvim_set_current_buf(buf)

  local capabilities = vim.lsp.protocol.make_client_capabilities()
  if encoding then
    capabilities.general = { positionEncodings = { encoding, "utf-16" } }
  end
  local expected_encoding = encoding or "utf-16"
  local initialized, declared, exit_code
  local published = {} -- the version of every publishDiagnostics, in arrival order
  local client_id = vim.lsp.start_client({
    name = "todo",
    cmd = { server },
    root_dir = dir,
    capabilities = capabilities,
    offset_encoding = encoding,
    flags = { debounce_text_changes = debounce },
    on_init = function(_, result)
      declared = result.capabilities
      initialized = true
    end,
    on_exit = function(code)
      exit_code = code
    end,
    handlers = {
      ["textDocument/publishDiagnostics"] = function(err, result, ctx, config)
        table.insert(published, result.version)
        return vim.lsp.diagnostic.on_publish_diagnostics(err, result, ctx, config)
      end,
    },
  })
  check(client_id, "vim.lsp.start_client did not start %s", server)
  check(vim.lsp.buf_attach_client(buf, client_id), "the buffer did not attach")
  wait_for("initialize", function()
    return initialized or exit_code ~= nil
  end)
  check(initialized, "the server exited with status %s before answering initialize",
    tostring(exit_code))

  check(declared.positionEncoding == expected_encoding, "positionEncoding %s, not %s",
    tostring(declared.positionEncoding), expected_encoding)
  local sync = declared.textDocumentSync
  check(type(sync) == "table" and sync.openClose == true and sync.change == 2,
    "textDocumentSync %s, not {openClose = true, change = 2}", vim.inspect(sync))
  check(declared.hoverProvider == true, "hoverProvider %s", vim.inspect(declared.hoverProvider))
  local client = vim.lsp.get_client_by_id(client_id)
  check(client.offset_encoding == expected_encoding, "Neovim speaks %s, not %s",
    client.offset_encoding, expected_encoding)

  -- 20 edits, with no wait in between: each a nvim_buf_set_text at byte columns.
  local edits = 0
  local function line(row)
    return vim.api.nvim_buf_get_lines(buf, row, row + 1, true)[1]
  end
  local function set_text(row, col, end_row, end_col, lines)
    vim.api.nvim_buf_set_text(buf, row, col, end_row, end_col, lines)
    edits = edits + 1
  end
  local function append(row, text)
    local n = #line(row)
    set_text(row, n, row, n, { text })
  end
  local function replace(row, old, new)
    local at = line(row):find(old, 1, true)
    check(at, "%q is not on line %d", old, row)
    set_text(row, at - 1, row, at - 1 + #old, { new })
  end
  for _, piece in ipairs({ "é", "😀", " ", "T", "O", "D", "O" }) do
    append(1, piece) -- line 1: "日本語 lineé😀 TODO", typed
  end
  local n = #line(1)
  set_text(1, n, 1, n, { "", "" }) -- split: a new, empty line 2 (a CRLF inserted)
  for _, piece in ipairs({ "𝄞", "界", " ", "x" }) do
    append(2, piece)
  end
  local m = #line(2)
  set_text(2, m - 1, 2, m, { "" }) -- delete the "x"
  replace(1, "😀", "🎉") -- a non-BMP character for another
  set_text(0, 0, 0, 0, { "TODO " }) -- line 0: "TODO # notes 😀"
  set_text(2, #line(2), 3, 0, { "" }) -- join line 3 ("end 𝄞") to line 2, across the CRLF
  for _, piece in ipairs({ "T", "O", "D", "O" }) do
    append(2, piece) -- line 2: "𝄞界 end 𝄞TODO"
  end
  check(edits == 20, "%d edits, not 20", edits)
  local final = vim.api.nvim_buf_get_lines(buf, 0, -1, true)
  local expected_lines = { "TODO # notes 😀", "日本語 lineé🎉 TODO", "𝄞界 end 𝄞TODO" }
  check(vim.deep_equal(final, expected_lines), "the buffer is %s", vim.inspect(final))
  local version = vim.lsp.util.buf_versions[buf]

  -- Hover right after the last edit, on the last TODO (line 2): the final version and text.
  vim.api.nvim_win_set_cursor(0, { 3, final[3]:find("TODO", 1, true) - 1 })
  local params = vim.lsp.util.make_position_params()
  local answers, why = vim.lsp.buf_request_sync(buf, "textDocument/hover", params, WAIT)
  check(answers, "no hover answer: %s", tostring(why))
  local answer = answers[client_id]
  check(answer and answer.error == nil, "hover: %s", vim.inspect(answer))
  local hover = answer.result
  local want = string.format("version %d: %s", version, final[3])
  check(hover and hover.contents and hover.contents.kind == "plaintext"
    and hover.contents.value == want, "hover answered %s, not %q", vim.inspect(hover), want)

  -- Neovim sends the text with a line ending after its last line ('fixeol'), so the
  -- server's document has one more line, empty; past that one: null.
  local function hover_at_line(row)
    local at = { textDocument = params.textDocument, position = { line = row, character = 0 } }
    local all, reason = vim.lsp.buf_request_sync(buf, "textDocument/hover", at, WAIT)
    check(all and all[client_id], "no hover answer on line %d: %s", row, tostring(reason))
    check(all[client_id].error == nil, "hover on line %d: %s", row, vim.inspect(all[client_id]))
    return all[client_id].result
  end
  local empty = hover_at_line(#final)
  local want_empty = string.format("version %d: ", version)
  check(empty and empty.contents.value == want_empty, "hover on the empty last line answered %s",
    vim.inspect(empty))
  local past = hover_at_line(#final + 1)
  check(past == nil, "hover past the last line answered %s", vim.inspect(past))

  -- The diagnostics of the final version, as Neovim keeps them (byte columns).
  wait_for("the diagnostics of version " .. version, function()
    return published[#published] == version
  end)
  -- The server debounces its analysis: a version superseded within it publishes nothing,
  -- and no version publishes after a newer one did.
  for i = 2, #published do
    check(published[i - 1] < published[i], "diagnostics of version %s after version %s",
      tostring(published[i]), tostring(published[i - 1]))
  end
  local expected = {}
  for row, text in ipairs(final) do
    local from = 1
    while true do
      local at = text:find("TODO", from, true)
      if not at then
        break
      end
      table.insert(expected, { lnum = row - 1, col = at - 1, end_lnum = row - 1, end_col = at + 3 })
      from = at + 4
    end
  end
  local seen = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    check(d.severity == vim.diagnostic.severity.WARN and d.source == "todo"
      and d.message == "TODO found", "a diagnostic %s", vim.inspect(d))
    table.insert(seen, { lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col })
  end
  table.sort(seen, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  check(vim.deep_equal(seen, expected), "diagnostics at %s, TODOs at %s", vim.inspect(seen),
    vim.inspect(expected))

  -- Stop: shutdown, then exit; the server exits with status 0.
  vim.lsp.stop_client(client_id)
  wait_for("the server to exit", function()
    return exit_code ~= nil
  end)
  check(exit_code == 0, "the server exited with status %s", tostring(exit_code))

  -- Neovim's LSP log, from where this run began: debug lines, and no WARN or ERROR.
  local file = assert(io.open(log_path, "rb"))
  file:seek("set", log_start)
  local log = file:read("*a")
  file:close()
  local bad, debug_lines = {}, 0
  for entry in log:gmatch("[^\n]+") do
    if entry:match("^%[WARN%]") or entry:match("^%[ERROR%]") then
      table.insert(bad, entry)
    elseif entry:match("^%[DEBUG%]") then
      debug_lines = debug_lines + 1
    end
  end
  check(#bad == 0, "the LSP log %s has %d WARN or ERROR lines:\n%s", log_path, #bad,
    table.concat(bad, "\n"))
  check(log:find("textDocument/didChange", 1, true), "the LSP log %s has no didChange: "
    .. "not at debug level?", log_path)

  return string.format("ok: %s, %s, %d edits, version %d, %d diagnostics published, "
    .. "%d TODOs, hover %q, exit 0, %d debug log lines and no WARN or ERROR",
    string.format("Neovim %d.%d.%d", vim.version().major, vim.version().minor,
      vim.version().patch), expected_encoding, edits, version,
    #published, #expected, want, debug_lines)
end

local ok, result = xpcall(main, function(e)
  if type(e) == "table" and e.failed then
    return e.failed
  end
  return debug.traceback(tostring(e), 2)
end)
if ok then
  io.stdout:write(result, "\n")
  io.stdout:flush()
  vim.cmd("qall!")
else
  io.stderr:write("FAILED: ", result, "\n")
  io.stderr:flush()
  vim.cmd("cquit 1")
end
