-- Argo CD health of a cache.example.com/Memcached, from the conditions memcached-gitops writes
-- (reconciler/status.py). Degraded=True or Stalled=True: Degraded (an invalid spec, a Deployment
-- the reconciler does not own, a failed apply, the Deployment's progress deadline exceeded or a
-- replica failure). Reconciling=True or Progressing=True, or a status older than the spec:
-- Progressing. Available=True: Healthy, also when Argo CD applies the Deployment itself
-- (Degraded=False, reason GitOpsApplied).
local hs = {}

local function condition(conditions, ctype)
  for _, c in ipairs(conditions) do
    if c.type == ctype then
      return c
    end
  end
  return nil
end

local function is_true(c)
  return c ~= nil and c.status == "True"
end

local function describe(c)
  if c.message ~= nil and c.message ~= "" then
    return c.reason .. ": " .. c.message
  end
  return c.reason
end

if obj.status == nil or obj.status.conditions == nil then
  hs.status = "Progressing"
  hs.message = "Waiting for the reconciler to report status"
  return hs
end

local conditions = obj.status.conditions
local degraded = condition(conditions, "Degraded")
local stalled = condition(conditions, "Stalled")
local available = condition(conditions, "Available")
local progressing = condition(conditions, "Progressing")
local reconciling = condition(conditions, "Reconciling")

local generation = obj.metadata.generation
local observed = obj.status.observedGeneration
if observed == nil and available ~= nil then
  observed = available.observedGeneration
end
if generation ~= nil and observed ~= nil and observed < generation then
  hs.status = "Progressing"
  hs.message = "Waiting for the reconciler to observe generation " .. generation
  return hs
end

if is_true(degraded) then
  hs.status = "Degraded"
  hs.message = describe(degraded)
  return hs
end
if is_true(stalled) then
  hs.status = "Degraded"
  hs.message = describe(stalled)
  return hs
end
if is_true(progressing) or is_true(reconciling) then
  hs.status = "Progressing"
  if is_true(progressing) then
    hs.message = describe(progressing)
  else
    hs.message = describe(reconciling)
  end
  return hs
end
if is_true(available) then
  hs.status = "Healthy"
  hs.message = describe(available)
  if degraded ~= nil and degraded.reason == "GitOpsApplied" then
    hs.message = hs.message .. "; " .. degraded.message
  end
  return hs
end

hs.status = "Progressing"
if available ~= nil then
  hs.message = describe(available)
else
  hs.message = "Waiting for the reconciler to report availability"
end
return hs
