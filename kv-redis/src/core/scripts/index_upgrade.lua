-- One step of bringing an index of the layout before buckets into buckets (`ix_upgrade` in
-- `index.lua`): a store runs it when it opens, until it answers 0. ARGV: the two shared ones.
return ix_upgrade(P) and 1 or 0
