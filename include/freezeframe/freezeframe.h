// Umbrella header: everything the public API offers.
#pragma once

#include "freezeframe/array.h"
#include "freezeframe/autodiff.h"
#include "freezeframe/block_reduce.h"
#include "freezeframe/control_flow.h"
#include "freezeframe/dist.h"
#include "freezeframe/errors.h"
#include "freezeframe/freeze.h"
#include "freezeframe/init.h"
#include "freezeframe/math.h"
#include "freezeframe/optimizers.h"
#include "freezeframe/pcg32.h"
#include "freezeframe/recording.h"
#include "freezeframe/reduce_op.h"
#include "freezeframe/scalar_type.h"
#include "freezeframe/size.h"
#include "freezeframe/traverse.h"
