-- Pause: the controller freezes every member's bounds, spill, failover and optimization while the
-- annotation is "true"; member HPAs keep scaling within the frozen bounds.
if obj.metadata.annotations == nil then
  obj.metadata.annotations = {}
end
obj.metadata.annotations["autoscaling.karmada.io/paused"] = "true"
return obj
