no kernel accepted
