#pragma once
// Measuring logits against a reference: public (glass/verify.h, where it is documented).
#include "glass/verify.h"
