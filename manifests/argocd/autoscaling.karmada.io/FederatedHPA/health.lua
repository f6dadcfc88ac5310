-- Argo CD health of a FederatedHPA, from the conditions the controller writes (Lua 5.1, as Argo CD runs).
--   Progressing: being deleted ("Pending deletion"), or:
--   Progressing: the controller has not yet written status for the current spec (observedGeneration).
--   Degraded:    Ready=False (no healthy cluster matches clusterAffinity, or the namespace is refused),
--                or FloorHeld=False (the reachable clusters cannot hold minReplicas).
--   Progressing: Ready=Unknown (a member that holds part of the bounds cannot be observed now).
--   Suspended:   annotated autoscaling.karmada.io/paused: "true".
--   Healthy:     Ready=True; the message names the clusters that are unhealthy or failed over, if any.
local hs = {}

-- Argo CD runs health checks on objects being deleted too (held by a finalizer until then)
if obj.metadata ~= nil and obj.metadata.deletionTimestamp ~= nil then
  hs.status = "Progressing"
  hs.message = "Pending deletion: the controller is removing the member HPAs"
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

local function said(c, fallback)
  if c ~= nil and c.message ~= nil and c.message ~= "" then
    return c.message
  end
  return fallback
end

local annotations = obj.metadata and obj.metadata.annotations
if annotations ~= nil and annotations["autoscaling.karmada.io/paused"] == "true" then
  hs.status = "Suspended"
  hs.message = "Paused: member bounds, spill, failover and optimization are frozen"
  return hs
end

local status = obj.status
if status == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to assign the clusters"
  return hs
end

local generation = obj.metadata and obj.metadata.generation
if generation ~= nil and (status.observedGeneration == nil or status.observedGeneration < generation) then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to observe generation " .. tostring(generation)
  return hs
end

local ready = find(status.conditions, "Ready")
if ready == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the controller to assign the clusters"
  return hs
end
if ready.status == "False" then
  hs.status = "Degraded"
  hs.message = (ready.reason or "NotReady") .. ": " .. said(ready, "not ready")
  return hs
end

local floor = find(status.conditions, "FloorHeld")
if floor ~= nil and floor.status == "False" then
  hs.status = "Degraded"
  hs.message = (floor.reason or "FloorNotHeld") .. ": " .. said(floor, "minReplicas cannot be held")
  return hs
end

if ready.status ~= "True" then
  hs.status = "Progressing"
  hs.message = said(ready, "Ready is " .. tostring(ready.status))
  return hs
end

local away = {}
if status.clusters ~= nil then
  for _, row in ipairs(status.clusters) do
    local assigned = find(row.conditions, "Assigned")
    local healthy = find(row.conditions, "Healthy")
    if assigned ~= nil and assigned.reason == "FailedOver" then
      table.insert(away, row.name .. " failed over")
    elseif healthy ~= nil and healthy.status == "False" then
      table.insert(away, row.name .. " unhealthy")
    end
  end
end
hs.status = "Healthy"
hs.message = said(ready, "Ready")
if #away > 0 then
  hs.message = hs.message .. " (" .. table.concat(away, ", ") .. ")"
end
return hs
