/* load_limits.c — the defaults of RtLoadLimits (load.h): what one load may
 * make beyond the bytes of its files. Its own module, below every loader:
 * the .scene loader (procedural statements, morphs) and the assimp loader
 * (morph poses, MD2 frames) both read it, and the .scene loader places
 * assimp models, so it can live in neither. */
#include "scene/load.h"

RtLoadLimits rt_load_limits_default(void)
{
    RtLoadLimits l = {32u << 20, 64u << 20};
    return l;
}
