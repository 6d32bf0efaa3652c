-- man.lua - pandoc Lua filter: a page of docs/ (docs/traceagent-*.md, the
-- page contract of docs/meson.build) into a man page's structure.
--
-- The page starts with "# traceagent x" and one line saying what it is;
-- those two become the NAME section, "NAME - the line", NAME given as the
-- metadata field `name` (from the file name: traceagent-report).  The
-- page's "## Section" headings become the man page's sections (.SH, upper
-- case as man pages spell them), "### Sub" its subsections (.SS).  A link
-- to another page of docs/ keeps its text only: the man page names the
-- other page as "traceagent-x(1)" in its See also.
local name

function Meta(meta)
  name = meta.name and pandoc.utils.stringify(meta.name)
end

local function fix_blocks(blocks)
  local out = {}
  local i = 1
  -- The title and the one-line description.
  while i <= #blocks and blocks[i].t ~= "Header" do
    i = i + 1
  end
  if i > #blocks or blocks[i].level ~= 1 then
    error("man.lua: the page does not start with a '# traceagent ...' heading")
  end
  local title = pandoc.utils.stringify(blocks[i].content)
  local desc = blocks[i + 1]
  if not desc or desc.t ~= "Para" then
    error("man.lua: no one-line description under '# " .. title .. "'")
  end
  table.insert(out, pandoc.Header(1, {pandoc.Str("NAME")}))
  local line = {pandoc.Str(name or title:gsub(" ", "-")), pandoc.Space(), pandoc.Str("-"), pandoc.Space()}
  for _, inl in ipairs(desc.content) do
    table.insert(line, inl)
  end
  table.insert(out, pandoc.Para(line))
  for j = i + 2, #blocks do
    local b = blocks[j]
    if b.t == "Header" then
      if b.level == 1 then
        error("man.lua: a second '# ' heading: " .. pandoc.utils.stringify(b.content))
      end
      b.level = b.level - 1
      if b.level == 1 then
        b.content = {pandoc.Str(pandoc.utils.stringify(b.content):upper())}
      end
    end
    table.insert(out, b)
  end
  return out
end

function Link(l)
  if not l.target:match("^%a[%w+.-]*:") and l.target:match("%.md$") or l.target:match("%.md#") then
    return l.content
  end
end

return {
  {Meta = Meta},
  {Link = Link},
  {Pandoc = function(doc)
    doc.blocks = fix_blocks(doc.blocks)
    return doc
  end},
}
