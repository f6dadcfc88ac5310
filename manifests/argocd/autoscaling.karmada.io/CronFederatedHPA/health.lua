-- Argo CD health of a CronFederatedHPA, from its conditions and execution histories (Lua 5.1).
--   Degraded:    Ready=False (the namespace is refused), or a rule's newest execution failed.
--   Progressing: being deleted ("Pending deletion"), or:
--   Progressing: no status yet, or not yet written for the current spec, or a fire is being applied (Executing).
--   Suspended:   every rule is suspended.
--   Healthy:     otherwise; the message says the next execution.
local hs = {}

-- Argo CD runs health checks on objects being deleted too (held by a finalizer until then)
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Pending deletion"
  return hs
end

local function find(conditions, kind)
  if conditions == nil then
    return nil
  end
  for _, c in ipairs(conditions) do
    if c.type == kind then
      return c
    end
  end
  return nil
end

-- the newest entry of a list of executions, by scheduleTime (RFC 3339 in UTC sorts as text)
local function newest(executions)
  local best = nil
  if executions == nil then
    return nil
  end
  for _, e in ipairs(executions) do
    if best == nil or (e.scheduleTime or "") > (best.scheduleTime or "") then
      best = e
    end
  end
  return best
end

local status = obj.status
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to schedule the rules"
  return hs
end
local ready = find(status.conditions, "Ready")
if ready ~= nil and ready.status == "False" then
  hs.status = "Degraded"
  hs.message = (ready.reason or "NotReady") .. ": " .. (ready.message or "not ready")
  return hs
end

if status.executionHistories ~= nil then
  for _, history in ipairs(status.executionHistories) do
    local failed = newest(history.failedExecutions)
    local succeeded = newest(history.successfulExecutions)
    if failed ~= nil and (succeeded == nil or (failed.scheduleTime or "") > (succeeded.scheduleTime or "")) then
      hs.status = "Degraded"
      hs.message = "rule " .. tostring(history.ruleName) .. " failed at " .. tostring(failed.scheduleTime)
        .. ": " .. tostring(failed.message)
      return hs
    end
  end
end

local generation = obj.metadata and obj.metadata.generation
if generation ~= nil and status.observedGeneration ~= nil and status.observedGeneration < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
  return hs
end

local executing = find(status.conditions, "Executing")
if executing ~= nil and executing.status == "True" then
  hs.status = "Progressing"
  hs.message = "Applying a scheduled fire"
  return hs
end

local rules = (obj.spec and obj.spec.rules) or {}
local active = 0
for _, rule in ipairs(rules) do
  if rule.suspend ~= true then
    active = active + 1
  end
end
if #rules > 0 and active == 0 then
  hs.status = "Suspended"
  hs.message = "Every rule is suspended"
  return hs
end

local next_time = nil
if status.executionHistories ~= nil then
  for _, history in ipairs(status.executionHistories) do
    local t = history.nextExecutionTime
    if t ~= nil and (next_time == nil or t < next_time) then
      next_time = t
    end
  end
end
hs.status = "Healthy"
if next_time ~= nil then
  hs.message = "Next execution at " .. next_time
else
  hs.message = tostring(active) .. " active rule(s)"
end
return hs
