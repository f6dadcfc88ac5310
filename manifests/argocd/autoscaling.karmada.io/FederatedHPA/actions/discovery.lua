-- Argo CD resource actions of a FederatedHPA: pause freezes autoscaling (the annotation below), resume
-- lifts it. Only the one that changes something is offered.
local actions = {}
local annotations = obj.metadata.annotations
local paused = annotations ~= nil and annotations["autoscaling.karmada.io/paused"] == "true"
actions["pause"] = {["disabled"] = paused}
actions["resume"] = {["disabled"] = not paused}
return actions
