-- Resume: remove the pause annotation (any other value would also resume; removing leaves no trace).
if obj.metadata.annotations ~= nil then
  obj.metadata.annotations["autoscaling.karmada.io/paused"] = nil
end
return obj
