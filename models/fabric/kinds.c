/* fabric_register_kinds: one call a test makes for the fabric's kinds (static
 * libraries drop unreferenced constructors, so registration is explicit). */
#include "models/fabric/fabric.h"

#include "models/fabric/endpoint.h"
#include "models/fabric/switch.h"

void fabric_register_kinds(void)
{
    fabric_switch_register();
    fabric_endpoint_register();
}
