/* placeholder; deleted when the real server lands */ int pkbs__placeholder;
