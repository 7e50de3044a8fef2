// Element types used by the IR and backends: the public ScalarType plus nothing else.
#pragma once

#include "freezeframe/scalar_type.h"
