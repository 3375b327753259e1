/* SPDX-License-Identifier: MIT */
/* hostagg internals that the unit suites need: a vCPU's entry and whether any flow is held. */
#ifndef VNOISE_HOST_ENGINE_HOSTAGG_PRIV_H
#define VNOISE_HOST_ENGINE_HOSTAGG_PRIV_H

#include "engine/hostagg.h"

/* Is there any flow or tap record in the engine? */
bool hostagg_has_net(const struct hostagg *a);
/* The vCPU entry, or NULL if dom/vcpu is not bound. */
const struct hostagg_vcpu *hostagg_vcpu_get(const struct hostagg *a, uint32_t dom, uint32_t vcpu);

#endif
