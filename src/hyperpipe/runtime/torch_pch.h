// Precompiled for every libtorch source of the runtime: parsing torch/torch.h takes
// some 14 s per file on a 2-core machine, and only this part includes it.
#pragma once

#include <torch/torch.h>
