build failed: layout: tirx_layout_wgmma_a: k is 24, expected a multiple of 16 in [16, 256]
