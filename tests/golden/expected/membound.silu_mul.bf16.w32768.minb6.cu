build failed: opts->min_blocks is 6 with CTAs of 1024 threads (the plan's threads for this width), expected min_blocks x threads at most 2048, the threads one SM holds
